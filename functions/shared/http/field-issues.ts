import type { FieldIssue } from '../errors.ts';
import type * as z from '../zod.ts';

/**
 * Zod issues as the field list both APIs report: dot-notation paths (`messages.0.text`), `body` for the whole document.
 * A path may hold a caller's key; one that is not well-formed Unicode is named with U+FFFD in place of each lone
 * surrogate, so the answer itself stays JSON a strict parser reads.
 */
export function toFieldIssues(error: z.core.$ZodError, prefix: readonly (string | number)[] = []): FieldIssue[] {
  return error.issues.map((issue) => {
    const path = [...prefix, ...issue.path.map(String)];
    return { field: path.length > 0 ? path.join('.').toWellFormed() : 'body', message: issue.message.toWellFormed() };
  });
}

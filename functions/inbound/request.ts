import { ValidationError } from '#shared/errors.ts';
import type { HttpRequest } from '#shared/http/http-stack.ts';
import { sourceIp } from '#shared/http/gateway-event.ts';
import { toFieldIssues } from '#shared/http/field-issues.ts';
import * as z from '#shared/zod.ts';

/** What the webhook routes take from an API Gateway request: the token in the path and the caller's address. */
const webhookRequestSchema = z.object({
  pathParameters: z.object({ token: z.string().check(z.minLength(1)) }),
  sourceIp: z.string().check(z.minLength(1)),
});

export function webhookCaller(request: HttpRequest): { token: string; clientIp: string } {
  const parsed = webhookRequestSchema.safeParse({ pathParameters: request.pathParameters, sourceIp: sourceIp(request) });
  if (!parsed.success) throw new ValidationError(toFieldIssues(parsed.error));
  return { token: parsed.data.pathParameters.token, clientIp: parsed.data.sourceIp };
}

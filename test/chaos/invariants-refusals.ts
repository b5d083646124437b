import type { Answer } from './client.ts';
import { AWS_ERROR_NAME, type Violate } from './invariants.ts';

/**
 * Every refusal, whatever its status, in its API's error shape: the webhook API's `{error}` (a 400 also `details`, each
 * `{field, message}`), the workflow API's `{detail}`; never a 500; a 429 or 5xx says when to retry; no AWS error's name.
 */
export function checkRefusals(answers: readonly Answer[], violate: Violate): void {
  for (const answer of answers) {
    const problem = refusalProblem(answer);
    if (problem) violate('refusal-shape', `${answer.label} ${answer.status}: ${problem}`);
  }
}

export function refusalProblem(answer: Answer): string | undefined {
  if (answer.status < 400) return undefined;
  if (answer.status === 500) return `500 ${answer.refusalBody}`;
  if ((answer.status === 429 || answer.status >= 500) && !answer.retryAfter) return `no Retry-After (${answer.refusalBody})`;
  if (AWS_ERROR_NAME.test(answer.refusalBody)) return `names an AWS error: ${answer.refusalBody}`;
  let body: unknown;
  try {
    body = JSON.parse(answer.refusalBody);
  } catch {
    return `not JSON: ${answer.refusalBody.slice(0, 200)}`;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return `not an object: ${answer.refusalBody}`;
  const fields = body as Record<string, unknown>;
  if (answer.path.includes('/api/v1/webhooks/')) {
    if (typeof fields.error !== 'string') return `no error: ${answer.refusalBody}`;
    if (answer.status === 400 && !detailsListed(fields.details)) return `a 400 without details [{field, message}]: ${answer.refusalBody}`;
  } else if (typeof fields.detail !== 'string') {
    return `no detail: ${answer.refusalBody}`;
  }
  return undefined;
}

const detailsListed = (details: unknown) =>
  Array.isArray(details) &&
  details.length > 0 &&
  details.every(
    (item) => typeof (item as { field?: unknown }).field === 'string' && typeof (item as { message?: unknown }).message === 'string',
  );

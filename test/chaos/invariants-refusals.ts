import type { Answer } from './client.ts';
import type { Violate } from './invariants.ts';
import { AWS_ERROR_NAME } from './outcomes.ts';
import { HTTP_API_MESSAGES } from '#lib/twin/http-api-answers.ts';

/**
 * Every refusal, whatever its status, in its API's error shape: the webhook API's `{error}` (a 400 also `details`, each
 * `{field, message}`), the workflow API's `{detail}`; never a 500; a 429 or 5xx says when to retry; no AWS error's name.
 * One exception, which nothing can shape: the webhook API's HTTP API answering a function that failed (500) or did not
 * answer in time (503) by itself, with its `{"message"}` and no Retry-After, as the webhook document lists them.
 */
export function checkRefusals(answers: readonly Answer[], violate: Violate): void {
  for (const answer of answers) {
    const problem = refusalProblem(answer);
    if (problem) violate('refusal-shape', `${answer.label} ${answer.status}: ${problem}`);
  }
}

/** The HTTP API's own answers to a failed integration, body for body (lib/twin/http-api-answers.ts). */
const HTTP_API_INTEGRATION_ANSWERS = new Map([
  [500, JSON.stringify({ message: HTTP_API_MESSAGES.integrationFailure })],
  [503, JSON.stringify({ message: HTTP_API_MESSAGES.integrationTimeout })],
]);

function refusalProblem(answer: Answer): string | undefined {
  if (answer.status < 400) return undefined;
  const webhook = answer.path.includes('/api/v1/webhooks/');
  if (webhook && HTTP_API_INTEGRATION_ANSWERS.get(answer.status) === answer.refusalBody) return undefined;
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
  if (webhook) {
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

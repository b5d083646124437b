import { randomUUID } from 'node:crypto';
import {
  createPublishedClient,
  PublishedApiError,
  resumeRun,
  RunStreamAbortedError,
  streamRun,
  type PublishedClient,
  type RunPosition,
} from './published-client.ts';

/*
 * The typed client as a caller's server uses it: list the workflows, run one and wait for its result, stream an execution,
 * abort the stream and resume it exactly where it stood, and answer an execution's approval. It needs the workflows of
 * test/fixtures/workflows published (`echo`, `support-bot`) and a key with every scope, e.g. on the twin:
 *
 *   npm run --silent admin -- publish test/fixtures/workflows
 *   PUBLISHED_API_KEY=$(npm run --silent admin -- keys create --name example --preset full --json |
 *     node -pe 'JSON.parse(require("fs").readFileSync(0)).key') \
 *   node --import tsx lib/client/example.ts
 *
 * PUBLISHED_API_URL is the API's URL: the stack's ApiUrl output on AWS, the twin's http://127.0.0.1:3000 by default.
 */

const key = process.env.PUBLISHED_API_KEY;
if (!key) {
  console.error('Set PUBLISHED_API_KEY to a key of the project (npm run --silent admin -- keys create --name example --preset full)');
  process.exit(2);
}
const client = createPublishedClient({ baseUrl: process.env.PUBLISHED_API_URL ?? 'http://127.0.0.1:3000', key });
const userId = `example-${randomUUID().slice(0, 8)}`;

/** openapi-fetch answers `{ data }` or `{ error, response }`: a refusal becomes the client's own error, with its detail. */
function dataOf<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.data !== undefined) return answer.data;
  const detail = (answer.error as { detail?: string } | undefined)?.detail ?? answer.response.statusText;
  throw new PublishedApiError(answer.response.status, detail);
}

// 1. The workflows of the project's active publication.
const listed = dataOf(await client.GET('/workflows'));
console.log(`workflows: ${listed.workflows.map((workflow) => workflow.id).join(', ')}`);

// 2. An execution that answers when it settles.
const executed = dataOf(
  await client.POST('/workflows/{workflow_id}/execute', {
    params: { path: { workflow_id: 'echo' } },
    body: { user_id: userId, input: { message: 'hello' } },
  }),
);
console.log(`execute echo: ${executed.status}, output ${JSON.stringify(executed.output)}`);

// 3. A streamed run whose caller stops reading after two events (a deadline of its own, a page closed), then resumes:
// the thrown position is the last event handed over, so the resume repeats none and misses none.
const streamedIds: number[] = [];
const stop = new AbortController();
let position: RunPosition | undefined;
try {
  const whole = await streamRun(
    client,
    'echo',
    { user_id: userId, input: { message: 'streamed' } },
    {
      idempotencyKey: randomUUID(),
      signal: stop.signal,
      onEvent: (event) => {
        streamedIds.push(event.id);
        if (streamedIds.length === 2) stop.abort();
      },
    },
  );
  position = { executionId: whole.executionId, lastEventId: whole.lastEventId };
} catch (error) {
  if (!(error instanceof RunStreamAbortedError)) throw error;
  position = error.position;
}
console.log(`stream echo: events ${streamedIds.join(' ')}, stopped at event ${position.lastEventId} of execution ${position.executionId}`);
const resumedIds: number[] = [];
const resumed = await resumeRun(client, position.executionId!, {
  lastEventId: position.lastEventId,
  onEvent: (event) => resumedIds.push(event.id),
});
console.log(
  `resumed: events ${resumedIds.join(' ')}, complete ${resumed.complete.status}, output ${JSON.stringify(resumed.complete.output)}`,
);

// 4. An execution that stops at its approval, the approval, and the execution going on to its end.
const paused = dataOf(
  await client.POST('/workflows/{workflow_id}/execute', {
    params: { path: { workflow_id: 'support-bot' } },
    body: { user_id: userId, input: { message: 'refund please' } },
  }),
);
console.log(`execute support-bot: ${paused.status}, approval ${paused.pending_approval?.approval_id}: ${paused.pending_approval?.message}`);
const path = { params: { path: { execution_id: paused.execution_id } } };
const decided = dataOf(await client.POST('/executions/{execution_id}/approve', { ...path, body: { feedback: 'go ahead' } }));
console.log(`approve: ${decided.decision}, ${decided.status}`);
console.log(`execution ${paused.execution_id}: ${(await settled(client, paused.execution_id)).status}`);

/** Polls the execution until it leaves `queued` and `running`, as `poll_url` invites, for at most a minute. */
async function settled(api: PublishedClient, executionId: string) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const execution = dataOf(await api.GET('/executions/{execution_id}', { params: { path: { execution_id: executionId } } }));
    if ((execution.status !== 'queued' && execution.status !== 'running') || Date.now() > deadline) return execution;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

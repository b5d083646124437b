import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callEvent } from '../support/events.ts';
import { http, postJson } from '../support/http.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, publishFixtures, publishedClient } from '../support/published.ts';

/**
 * What `npm start` shows on its terminal, collected here instead: a line per request as its response ends, a line
 * per Step Functions execution as it starts and ends, and never a token or a key whole.
 */
class Lines {
  readonly all: string[] = [];
  private readonly waiting: { match: RegExp; resolve: (line: string) => void }[] = [];

  readonly push = (line: string) => {
    this.all.push(line);
    for (const waiter of this.waiting.filter((candidate) => candidate.match.test(line))) {
      this.waiting.splice(this.waiting.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  };

  /** The first line matching, now or when it comes (a response's line follows its last byte; the test's timeout bounds the wait). */
  waitFor(match: RegExp): Promise<string> {
    const found = this.all.find((line) => match.test(line));
    return found !== undefined ? Promise.resolve(found) : new Promise((resolve) => this.waiting.push({ match, resolve }));
  }
}

const requests = new Lines();
const executions = new Lines();
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin({ onRequestLine: requests.push, onExecutionLine: executions.push });
}, 60_000);
afterAll(() => twin?.close());

const TIME = '\\d\\d:\\d\\d:\\d\\d\\.\\d{3}';
const DURATION = '\\d+(?: ms|\\.\\d s)';
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('the twin terminal', () => {
  it('shows each webhook request with its status, function and duration, cold on the first, and the token cut', async () => {
    const link = await boundLink(twin, 'calls');
    const shownToken = escape(`${link.token.slice(0, 10)}…`);

    expect((await http(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/ping?token=${link.token}`)).status).toBe(200);
    expect((await http(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/ping`)).status).toBe(200);
    expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`, callEvent())).status).toBe(201);
    const staged = `${twin.webhookUrl}/prod/api/v1/webhooks/${link.token}/ping`;
    expect((await http(staged, { undocumented: "the HTTP API's $default stage has no path" })).status).toBe(404);
    expect((await http(`${twin.url}/dev/api/v1/webhooks/${link.token}/ping`)).status).toBe(404);

    const firstPing = await requests.waitFor(/GET \/api\/\S+\/ping\?/);
    expect(firstPing).toMatch(new RegExp(`^${TIME} GET /api/v1/webhooks/${shownToken}/ping\\?…=… 200 WebhookPing ${DURATION} cold$`));
    expect(await requests.waitFor(/GET \/api\/\S+\/ping /)).toMatch(
      new RegExp(`^${TIME} GET /api/v1/webhooks/${shownToken}/ping 200 WebhookPing ${DURATION}$`),
    );
    expect(await requests.waitFor(/POST /)).toMatch(
      new RegExp(`^${TIME} POST /api/v1/webhooks/${shownToken}/events 201 WebhookPostEvent ${DURATION} cold$`),
    );
    // No route of the HTTP API: its `$default` route's function (the webhook documentation's) answers.
    expect(await requests.waitFor(/GET \/prod\//)).toMatch(
      new RegExp(`^${TIME} GET /prod/api/v1/webhooks/${shownToken}/ping 404 WebhookDocs ${DURATION} cold$`),
    );
    // The REST API's gateway answers by itself: no function ran.
    expect(await requests.waitFor(/GET \/dev\//)).toMatch(
      new RegExp(`^${TIME} GET /dev/api/v1/webhooks/${shownToken}/ping 404 - ${DURATION}$`),
    );

    const printed = requests.all.join('\n');
    expect(printed).not.toContain(link.token);
    // Not even more of it than `links list` shows.
    expect(printed).not.toContain(link.token.slice(0, 11));
    expect(printed).not.toContain(link.token.slice(10));
  });

  it('shows a blocking execute as its stream ends, and its execution starting and ending, with the ids and the key cut', async () => {
    await publishFixtures(twin);
    const { key } = await createKey(twin, 'full');
    const client = publishedClient(twin, key);

    const executed = await client.execute('echo', { user_id: 'u1', input: { message: 'hello' } });
    expect(executed.status).toBe(200);
    const executionId = executed.body.execution_id as string;
    const shownId = escape(`${executionId.slice(0, 8)}…`);
    expect((await client.getExecution(executionId)).status).toBe(200);

    expect(await requests.waitFor(/\/echo\/execute /)).toMatch(
      new RegExp(`^${TIME} POST /api/v1/published/workflows/echo/execute 200 PublishedExecute ${DURATION} cold stream$`),
    );
    expect(await requests.waitFor(/GET \/api\/v1\/published\/executions\//)).toMatch(
      new RegExp(`^${TIME} GET /api/v1/published/executions/${shownId} 200 PublishedGetExecution ${DURATION} cold$`),
    );
    expect(await executions.waitFor(new RegExp(`${shownId} started$`))).toMatch(
      new RegExp(`^${TIME} SFN local-workflow ${shownId} started$`),
    );
    expect(await executions.waitFor(new RegExp(`${shownId} SUCCEEDED`))).toMatch(
      new RegExp(`^${TIME} SFN local-workflow ${shownId} SUCCEEDED ${DURATION}$`),
    );

    const printed = [...requests.all, ...executions.all].join('\n');
    expect(printed).not.toContain(executionId);
    expect(printed).not.toContain(key);
  });
});

import { BroadcastChannel } from 'node:worker_threads';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { runCli } from '#lib/admin/cli.ts';
import { CHECK_NAMES } from '#lib/admin/verify-check.ts';
import { HELD_CHANNEL, type HeldMessage } from '../fixtures/functions/held.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/** One verify run against the twin: about 20 s on a quiet machine (every function's first start), many more on a loaded one. */
const VERIFY_TIMEOUT_MS = 240_000;
/** The status line the workflow check shows as it starts its streamed execution. */
const STREAMED_STEP = 'verify: workflow: a streamed execution, dropped and resumed';

interface Report {
  target: string;
  passed: boolean;
  interrupted?: string;
  cleaned_up: string[];
  checks: ({ check: string; status: string; detail: string } & Record<string, unknown>)[];
}

/**
 * SIGINT as the operator's Ctrl-C delivers it to `admin verify`'s listeners, in this process: the report and the
 * stores are then read here, and the signal lands at an exact point of the run instead of wherever a child has got to.
 */
const interruptNow = () => process.emit('SIGINT', 'SIGINT');

/**
 * `admin verify --skip-models --json` in this process against `twin`, its status lines given to `onStatus`. The twin's
 * AwaitApproval and stop route are held at their start (test/fixtures/functions/held.ts) until the test lets them go.
 */
async function verify(twin: TestTwin, onStatus: (line: string) => void): Promise<{ exitCode: number; report: Report }> {
  process.env.DATA_DIR = twin.dataDir;
  const result = await runCli(['verify', '--skip-models', '--json'], {
    stdin: () => Promise.reject(new Error('verify reads no stdin')),
    status: onStatus,
  });
  return { exitCode: result.exitCode, report: JSON.parse(result.stdout) as Report };
}

describe('admin verify interrupted', () => {
  let twin: TestTwin;
  const channel = new BroadcastChannel(HELD_CHANNEL);
  /** Decides when a held invocation goes on; by default at once. */
  let onHeld: (message: HeldMessage) => void;
  const go = (name: string, executionId: string) => channel.postMessage({ go: name, executionId } satisfies HeldMessage);
  const goAtOnce = (message: HeldMessage) => {
    if ('arrived' in message) go(message.arrived, message.executionId);
  };
  beforeAll(async () => {
    onHeld = goAtOnce;
    channel.onmessage = (message) => onHeld((message as { data: HeldMessage }).data);
    twin = await startTestTwin({
      routes: routes.map((route) =>
        route.id === 'PublishedStopExecution' ? { ...route, handler: '../test/fixtures/functions/held-stop-execution.ts' } : route,
      ),
      taskFunctions: taskFunctions.map((task) =>
        task.id === 'WorkflowAwaitApproval' ? { ...task, handler: '../test/fixtures/functions/held-await-approval.ts' } : task,
      ),
    });
  });
  afterAll(async () => {
    onHeld = goAtOnce;
    await twin?.close();
    channel.close();
  });

  const executionOf = async (executionId: string) =>
    (await twin.dynamo.send(new GetCommand({ TableName: twin.twin.tables.executions, Key: { pk: `execution#${executionId}` } }))).Item;

  it.each([
    ['reaches its approval before the stop arrives', 'approval first'],
    ['is stopped before it records its approval', 'stop first'],
  ] as const)(
    'ends the execution it started when the interrupt lands as that execution %s, and leaves none waiting',
    async (_, order) => {
      let armed = false;
      let interrupted: string | undefined;
      onHeld = (message) => {
        if ('arrived' in message && message.arrived === 'await-approval' && armed && !interrupted) {
          // The streamed execution has its approval recorded and is about to wait for it: the operator presses Ctrl-C.
          interrupted = message.executionId;
          interruptNow();
        } else if ('arrived' in message && message.arrived === 'stop' && message.executionId === interrupted) {
          // The cleanup read the execution as running and stops it: the execution's wait lands first, or the stop does.
          go(order === 'approval first' ? 'await-approval' : 'stop', interrupted);
        } else if ('done' in message && message.executionId === interrupted) {
          if (message.done === 'await-approval' && order === 'approval first') go('stop', interrupted);
          if (message.done === 'stop' && order === 'stop first') go('await-approval', interrupted);
        } else goAtOnce(message);
      };
      const { exitCode, report } = await verify(twin, (line) => (armed ||= line === STREAMED_STEP));

      expect(interrupted).toBeDefined();
      expect(exitCode).toBe(130);
      expect(report).toMatchObject({ passed: false, interrupted: 'SIGINT' });
      expect(report.checks.find((check) => check.check === 'cleanup')).toBeUndefined();
      expect(report.cleaned_up).toContain(`execution ${interrupted} (stopped or rejected)`);
      const record = await executionOf(interrupted!);
      if (order === 'approval first') {
        // Rejected: the decision applies (its 200), the execution ends failed on its own path.
        expect(record?.status).not.toBe('interrupted');
        expect(record?.approval_decision).toMatchObject({ decision: 'rejected', delivered: true });
      } else expect(record?.status).toBe('cancelled');
      const projectId = record?.project_id as string;
      expect(report.cleaned_up).toContainEqual(expect.stringMatching(new RegExp(`^key key_\\S+ of project ${projectId}$`)));
    },
    VERIFY_TIMEOUT_MS,
  );

  it(
    'with --json, prints the report and exits 130 when the interrupt lands before the checks can start, having made nothing',
    async () => {
      onHeld = goAtOnce;
      const { keys: keysBefore } = await twin.admin('keys', 'list');
      const { links: linksBefore } = await twin.admin('links', 'list');
      let lines = 0;
      // Its first status line comes before it opens the clients the checks use (target.verify()).
      const { exitCode, report } = await verify(twin, () => lines++ === 0 && interruptNow());

      expect(exitCode).toBe(130);
      expect(report).toMatchObject({ passed: false, interrupted: 'SIGINT', cleaned_up: [] });
      expect(report.target).toContain(twin.dataDir);
      expect(report.checks).toEqual(CHECK_NAMES.map((check) => ({ check, status: 'skip', detail: 'not run: interrupted by SIGINT' })));
      expect((await twin.admin('keys', 'list')).keys).toEqual(keysBefore);
      expect((await twin.admin('links', 'list')).links).toEqual(linksBefore);
    },
    VERIFY_TIMEOUT_MS,
  );
});

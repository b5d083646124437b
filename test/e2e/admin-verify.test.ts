import { spawn } from 'node:child_process';
import { GetCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { CostExplorerClient, UpdateCostAllocationTagsStatusCommand } from '@aws-sdk/client-cost-explorer';
import { CloudWatchClient, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { runCli } from '#lib/admin/cli.ts';
import { CHECK_NAMES, PROBE_SIZES } from '#lib/admin/verify-check.ts';
import { VERIFY_USER_ID } from '#lib/admin/verify-workflow.ts';
import { ALARMS_SKIPPED } from '#lib/admin/verify-alarms.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/local-names.ts';
import type { ServedRequest } from '#lib/twin/iam/front-door.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, publishFixtures } from '../support/published.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
/** One verify run against the twin: about 20 s on a quiet machine (every function's first start), many more on a loaded one. */
const VERIFY_TIMEOUT_MS = 240_000;

/** Bedrock's own words for the two refusals an operator meets first on a new account. */
const MARKETPLACE_DENIAL =
  'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model. Refer to the Amazon Bedrock documentation for further details. Your AWS Marketplace subscription for this model cannot be completed at this time. If you recently fixed this issue, try again after 15 minutes.';
const USE_CASE_MISSING =
  'Model use case details have not been submitted for this account. Fill out the Anthropic use case details form before using the model. If you have already filled out the form, try again in 15 minutes.';

interface Report {
  target: string;
  passed: boolean;
  interrupted?: string;
  cleaned_up: string[];
  checks: ({ check: string; status: string; detail: string } & Record<string, any>)[];
}

/** `admin verify --json` in this process, against the twin of `twin`'s data directory. */
async function verify(twin: TestTwin, ...flags: string[]): Promise<{ exitCode: number; report: Report }> {
  process.env.DATA_DIR = twin.dataDir;
  const result = await runCli(['verify', ...flags, '--json']);
  return { exitCode: result.exitCode, report: JSON.parse(result.stdout) as Report };
}

const checkOf = (report: Report, name: string) => report.checks.find((check) => check.check === name)!;

/** An alarm's state on the twin's CloudWatch, as the operator reads it. */
async function alarmStateOf(twin: TestTwin, alarmName: string): Promise<string | undefined> {
  const cloudWatch = new CloudWatchClient({
    endpoint: twin.twin.cloudwatch_endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const { MetricAlarms } = await cloudWatch.send(new DescribeAlarmsCommand({ AlarmNames: [alarmName] }));
  cloudWatch.destroy();
  return MetricAlarms?.[0]?.StateValue;
}

/** The project the verify run made for itself (it names it in the workflow check). */
const projectOf = (report: Report) => /project (admin-verify-[0-9a-f]+)/.exec(report.cleaned_up.join('\n'))?.[1];

/** What a verify run leaves in the stores: its links, keys, active publication, the event it sent, its executions' statuses. */
async function leftovers(twin: TestTwin, report: Report) {
  process.env.DATA_DIR = twin.dataDir;
  const projectId = projectOf(report);
  const webhook = checkOf(report, 'webhook');
  const { links } = await twin.admin('links', 'list');
  const { keys } = await twin.admin('keys', 'list');
  const active = await twin.dynamo.send(
    new GetCommand({ TableName: twin.twin.tables.publications, Key: { pk: `project#${projectId}`, sk: 'active' } }),
  );
  const link = (links as { link_id: string; source_id: string }[]).find((entry) => entry.link_id === webhook.link_id);
  const event =
    webhook.external_id && link?.source_id
      ? await twin.dynamo.send(
          new GetCommand({
            TableName: twin.twin.tables.inboundEvents,
            Key: { source_id: link.source_id, external_id: webhook.external_id },
          }),
        )
      : { Item: undefined };
  const runs = await twin.dynamo.send(
    new ScanCommand({
      TableName: twin.twin.tables.executions,
      FilterExpression: 'begins_with(pk, :record) AND user_id = :user AND project_id = :project',
      ExpressionAttributeValues: { ':record': 'execution#', ':user': VERIFY_USER_ID, ':project': projectId },
    }),
  );
  // Verify's link is left out of cost reports: its usage items go with the cleanup.
  const linkUsage = await twin.dynamo.send(
    new QueryCommand({
      TableName: twin.twin.tables.usage,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `link#${webhook.link_id}` },
    }),
  );
  return {
    projectId,
    linkUsageItems: linkUsage.Items?.length ?? 0,
    links: (links as { link_id: string; state: string }[]).filter((entry) => entry.link_id === webhook.link_id).map((entry) => entry.state),
    keys: (keys as { project_id: string; state: string }[]).filter((key) => key.project_id === projectId).map((key) => key.state),
    activePublication: active.Item,
    event: event.Item,
    runStatuses: (runs.Items ?? []).map((item) => item.status as string),
  };
}

/** The probes of the step-model check on the twin's default list: the cheapest model of each kind of profile source. */
const STEP_PROBES = [
  ['amazon.nova-micro-v1:0', 'foundation model', 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-micro-v1:0'],
  [
    'us.amazon.nova-micro-v1:0',
    'cross-region profile',
    'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-micro-v1:0',
  ],
] as const;

describe('admin verify against a twin that works', () => {
  let twin: TestTwin;
  let operator: { publicationId: string; keyId: string };
  /** The Bedrock calls the workflow step function made, signed with its own key, past the front door's policy check. */
  const stepCalls: ServedRequest[] = [];
  beforeAll(async () => {
    twin = await startTestTwin({
      onStoreRequest: (served) => {
        if (served.service === 'bedrock' && served.principal === 'WorkflowStep') stepCalls.push(served);
      },
    });
    // The operator's own project, which verify must never touch.
    const published = await publishFixtures(twin);
    operator = { publicationId: published.publication_id as string, keyId: (await createKey(twin, 'full')).keyId };
  });
  afterAll(() => twin?.close());

  it(
    'passes, every check in order passing or warning, and leaves nothing of its own active',
    async () => {
      const { exitCode, report } = await verify(twin, '--alarms');

      expect(exitCode).toBe(0);
      expect(report.passed).toBe(true);
      expect(report.target).toContain(twin.dataDir);
      expect(report.checks.map((check) => check.check)).toEqual([...CHECK_NAMES]);
      for (const check of report.checks) expect(['pass', 'warn'], `${check.check}: ${check.detail}`).toContain(check.status);
      expect(checkOf(report, 'openapi').status).toBe('pass');
      expect(checkOf(report, 'webhook')).toMatchObject({ status: 'pass', event_id: expect.any(Number) });
      expect(checkOf(report, 'workflow')).toMatchObject({ status: 'pass', resumes: 2 });
      expect(checkOf(report, 'concurrency')).toMatchObject({ status: 'pass', account_limit: 1000, unreserved: 1000 });

      // Every model of the allow-list, once, through its own profile, with a handful of tokens, priced.
      const models = checkOf(report, 'models');
      expect(models.status).toBe('pass');
      expect(models.models.map((call: { model: string; profile_arn: string }) => [call.model, call.profile_arn])).toEqual([
        ...twin.inferenceProfiles,
      ]);
      for (const call of models.models)
        expect(call).toMatchObject({ status: 'pass', output_tokens: expect.any(Number), usd: expect.any(Number) });
      const calls = twin.bedrock.requests.filter((request) => [...twin.inferenceProfiles.values()].includes(request.invokedAs));
      // One call per model from the models check, and one per probe from the step function.
      expect(calls).toHaveLength(twin.inferenceProfiles.size + STEP_PROBES.length);
      for (const call of calls)
        expect((call.body as { inferenceConfig: { maxTokens: number } }).inferenceConfig.maxTokens).toBeLessThanOrEqual(5);

      // The step function's own role called the cheapest model of each kind of profile, through the API and its profile.
      const stepModel = checkOf(report, 'step-model');
      expect(stepModel.status, stepModel.detail).toBe('pass');
      expect(stepModel.calls.map((call: { model: string; copies: string }) => [call.model, call.copies])).toEqual(
        STEP_PROBES.map(([model, copies]) => [model, copies]),
      );
      for (const call of stepModel.calls) {
        expect(call).toMatchObject({ status: 'pass', output_tokens: 3, usd: expect.any(Number), execution_id: expect.any(String) });
        expect(call.profile_arn).toBe(twin.inferenceProfiles.get(call.model));
        expect(call.input_tokens).toBeGreaterThan(0);
      }
      // Those calls were the step function's, signed with its key and let through by its role's condition.
      expect(stepCalls.map((served) => served.resource)).toEqual(STEP_PROBES.map(([model]) => twin.inferenceProfiles.get(model)));
      expect(twin.accessDenials).toEqual([]);

      // The default twin holds no streamed write: every size reaches the client at once, so the streams need no padding.
      const writes = checkOf(report, 'stream-writes');
      expect(writes).toMatchObject({ status: 'pass', recommendation: { padding_bytes: 0 } });
      expect(writes.sizes.map((size: { bytes: number }) => size.bytes)).toEqual(PROBE_SIZES);
      for (const size of writes.sizes) expect(size).toMatchObject({ reached_at_once: expect.any(Boolean), held_ms: expect.any(Number) });
      expect(writes.sizes[0]).toMatchObject({ bytes: 1, reached_at_once: true });
      expect(writes.detail).toContain('-c streamFlushPaddingBytes=0');

      const costTag = checkOf(report, 'cost-tag');
      expect(costTag).toMatchObject({ status: 'warn', tag_status: 'Inactive' });
      expect(costTag.detail).toContain(
        'aws ce update-cost-allocation-tags-status --cost-allocation-tags-status TagKey=Project,Status=Active',
      );

      const left = await leftovers(twin, report);
      expect(left.projectId).toMatch(/^admin-verify-/);
      expect(left.links).toEqual(['revoked']);
      expect(left.event).toBeUndefined();
      expect(left.keys).toEqual(['revoked']);
      expect(left.activePublication).toBeUndefined();
      expect(left.runStatuses).toEqual(['completed', 'completed', 'completed', 'completed']);
      expect(report.cleaned_up).toContain(`usage items of webhook link ${checkOf(report, 'webhook').link_id}`);
      expect(left.linkUsageItems).toBe(0);
      // Its project is marked in the cost report: in the totals, apart, and in no per-run figure.
      const costs = (await twin.admin('cost', 'report')) as { subjects: { subject: string; verify?: true }[]; verify_usd: number };
      expect(costs.subjects.find((subject) => subject.subject === `project#${left.projectId}`)).toMatchObject({ verify: true });
      expect(costs.verify_usd).toBeGreaterThan(0);
      expect(costs.subjects.some((subject) => subject.subject === `link#${checkOf(report, 'webhook').link_id}`)).toBe(false);
      // The operator's project is as it was: its publication active, its key working.
      const { keys } = await twin.admin('keys', 'list', '--project', 'default');
      const ownActive = await twin.dynamo.send(
        new GetCommand({ TableName: twin.twin.tables.publications, Key: { pk: 'project#default', sk: 'active' } }),
      );
      expect(ownActive.Item?.publication_id).toBe(operator.publicationId);
      expect(keys).toEqual([expect.objectContaining({ key_id: operator.keyId, state: 'active' })]);

      // --alarms: one alarm set to ALARM, its action published to the alarm topic, the alarm set back to OK.
      const alarms = checkOf(report, 'alarms');
      expect(alarms).toMatchObject({
        status: 'pass',
        topic: twin.alarmTopic.arn,
        history: `Successfully executed action ${twin.alarmTopic.arn}`,
      });
      expect(twin.alarmTopic.published.map((message) => JSON.parse(message.message))).toEqual([
        expect.objectContaining({
          AlarmName: alarms.alarm,
          NewStateValue: 'ALARM',
          NewStateReason: expect.stringMatching(/^admin verify /),
        }),
      ]);
      expect(report.cleaned_up).toContain(`alarm ${alarms.alarm} (set back to OK)`);
      expect(await alarmStateOf(twin, alarms.alarm)).toBe('OK');
    },
    VERIFY_TIMEOUT_MS,
  );

  it('refuses arguments it does not take as a usage mistake (exit 2), before it creates anything', async () => {
    process.env.DATA_DIR = twin.dataDir;
    const { links: before } = await twin.admin('links', 'list');
    const result = await runCli(['verify', 'now', '--json']);
    const { links: after } = await twin.admin('links', 'list');

    expect(result.exitCode).toBe(2);
    expect(JSON.parse(result.stdout)).toEqual({ error: 'verify takes no arguments (got now)' });
    expect(after).toEqual(before);
  });

  it(
    'stops at SIGINT, ends the execution it had started, removes what it had made, and exits 130',
    async () => {
      const child = spawn(process.execPath, ['bin/admin.mjs', 'verify', '--json'], {
        cwd: ROOT,
        env: { ...process.env, DATA_DIR: twin.dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      // Interrupted once its workflow check has started its first run: a link, a project, a key and an execution exist by then.
      await waitFor(async () => {
        const { Items } = await twin.dynamo.send(
          new ScanCommand({
            TableName: twin.twin.tables.executions,
            FilterExpression: 'begins_with(pk, :record) AND user_id = :user AND begins_with(project_id, :verify)',
            ExpressionAttributeValues: { ':record': 'execution#', ':user': VERIFY_USER_ID, ':verify': 'admin-verify-' },
          }),
        );
        // The first test's runs are completed; this execution is the one still under way.
        return Items?.find((item) => item.status !== 'completed');
      }, exited);
      child.kill('SIGINT');
      const exitCode = await exited;
      const report = JSON.parse(stdout) as Report;

      expect(exitCode).toBe(130);
      expect(report).toMatchObject({ passed: false, interrupted: 'SIGINT' });
      expect(report.checks.map((check) => check.check)).toEqual([...CHECK_NAMES]);
      expect(report.checks.slice(0, 2).map((check) => check.status)).toEqual(['pass', 'pass']);
      expect(checkOf(report, 'workflow')).toMatchObject({ status: 'skip', detail: 'interrupted by SIGINT before this check finished' });
      expect(checkOf(report, 'models')).toMatchObject({ status: 'skip', detail: 'not run: interrupted by SIGINT' });
      expect(report.checks.some((check) => check.check === 'cleanup')).toBe(false);
      expect(report.cleaned_up).toContainEqual(expect.stringMatching(/^execution \S+ \(stopped or rejected\)$/));
      const left = await leftovers(twin, report);
      expect(left.activePublication).toBeUndefined();
      expect(left.links).toEqual(['revoked']);
      expect(left.keys).toEqual(['revoked']);
      expect(left.runStatuses.length).toBeGreaterThan(0);
      expect(left.runStatuses).not.toContain('interrupted');
    },
    VERIFY_TIMEOUT_MS,
  );
});

describe('admin verify against a twin that fails every check it can', () => {
  let twin: TestTwin;
  const missing = ['PublishedOpenApi', 'WebhookOpenApi', 'WebhookPostEvent', 'PublishedApprove', 'PublishedStreamProbe'];
  beforeAll(async () => {
    // Without the documents, event intake, approvals and the probe; an account with a new account's concurrency; a step
    // function whose role's condition names what the profiles copy instead of the profiles.
    twin = await startTestTwin({
      routes: routes.filter((route) => !missing.includes(route.id)),
      lambdaConcurrencyLimit: 10,
      stepRoleCondition: 'copied',
    });
    const [claude, nova] = ['us.anthropic.claude-haiku-4-5-20251001-v1:0', 'amazon.nova-micro-v1:0'];
    twin.bedrock.scriptConverse(claude, [{ httpError: { status: 403, type: 'AccessDeniedException', message: MARKETPLACE_DENIAL } }]);
    twin.bedrock.scriptConverse(nova, [{ httpError: { status: 404, type: 'ResourceNotFoundException', message: USE_CASE_MISSING } }]);
    // The payer account has activated the cost allocation tag here.
    const costExplorer = new CostExplorerClient({
      endpoint: twin.twin.cost_explorer_endpoint,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    await costExplorer.send(
      new UpdateCostAllocationTagsStatusCommand({ CostAllocationTagsStatus: [{ TagKey: 'Project', Status: 'Active' }] }),
    );
    costExplorer.destroy();
  });
  afterAll(() => twin?.close());

  it(
    'fails each broken check with one line saying what was expected, what came back and what to do, exits 1, and still cleans up',
    async () => {
      const { exitCode, report } = await verify(twin);
      const failed = (name: string) => {
        const check = checkOf(report, name);
        expect(check.status, `${name}: ${check.detail}`).toBe('fail');
        return check.detail;
      };

      expect(exitCode).toBe(1);
      expect(report.passed).toBe(false);
      expect(report.checks.map((check) => check.check)).toEqual([...CHECK_NAMES]);
      for (const name of ['openapi', 'webhook', 'workflow', 'stream-writes']) {
        expect(failed(name), name).toMatch(/^expected .+; got .+\. \S.+$/);
        expect(failed(name)).not.toContain('\n');
      }
      expect(failed('openapi')).toMatch(
        /^expected GET \/api\/v1\/published\/openapi\.json to answer 200 .+; got 404 .+\. Deploy this version/,
      );
      expect(failed('webhook')).toMatch(
        /^expected POST \/api\/v1\/webhooks\/<token>\/events of a new dialog to answer 201 .+; got 404 .+ deploy this version/,
      );
      expect(failed('workflow')).toMatch(
        /^expected POST \/api\/v1\/published\/executions\/[^/]+\/approve to answer 200 .+; got 404 .+ deploy this version/,
      );
      expect(failed('stream-writes')).toMatch(
        /^expected GET \/api\/v1\/published\/diagnostics\/stream-probe\?bytes=\d+&hold_ms=\d+ to stream the probe .+; got 404 .+ deploy it/,
      );
      // Each refused model gets its own line, which names the fix; the models that answered still pass.
      const models = failed('models').split('\n');
      expect(models.find((line) => line.startsWith('us.anthropic.claude-haiku-4-5-20251001-v1:0: '))).toMatch(
        /AccessDeniedException.+aws-marketplace:Subscribe, aws-marketplace:Unsubscribe and aws-marketplace:ViewSubscriptions.+2-15 minutes/,
      );
      expect(models.find((line) => line.startsWith('amazon.nova-micro-v1:0: '))).toMatch(
        /ResourceNotFoundException.+aws bedrock put-use-case-for-model-access.+15 minutes/,
      );
      const calls = checkOf(report, 'models').models as { model: string; status: string }[];
      expect(
        calls
          .filter((call) => call.status === 'fail')
          .map((call) => call.model)
          .sort(),
      ).toEqual(['amazon.nova-micro-v1:0', 'us.anthropic.claude-haiku-4-5-20251001-v1:0']);
      // The two account checks only ever warn: this account's concurrency is a new account's.
      expect(checkOf(report, 'concurrency')).toMatchObject({ status: 'warn', account_limit: 10, unreserved: 10 });
      expect(checkOf(report, 'concurrency').detail).toMatch(/at least 100 .+ has 10 .+--quota-code L-B99A9384/);
      expect(checkOf(report, 'cost-tag')).toMatchObject({ status: 'pass', tag_status: 'Active' });
      // Without --alarms, nobody subscribed to the alarm topic is notified.
      expect(checkOf(report, 'alarms')).toEqual({ check: 'alarms', status: 'skip', detail: ALARMS_SKIPPED });
      expect(twin.alarmTopic.published).toEqual([]);

      // The step function was refused each model at the front door, on what its profile copies; the line for each names
      // the refused resource, the profile the call named and the ARNs the stack lists in the role's condition.
      const stepLines = failed('step-model').split('\n');
      const profileList = [...twin.inferenceProfiles.values()].join(', ');
      for (const [model, copies, copied] of STEP_PROBES) {
        const profile = twin.inferenceProfiles.get(model)!;
        const line = stepLines.find((entry) => entry.startsWith(`${model} (its profile copies a ${copies}): `));
        expect(line, model).toContain(
          `got Execution error (AccessDeniedException): User: arn:aws:sts::000000000000:assumed-role/WorkflowStep/`,
        );
        expect(line).toContain(`the role WorkflowStep was refused bedrock:InvokeModelWithResponseStream on ${copied}`);
        expect(line).toContain(`this call named ${profile}`);
        expect(line).toContain(`the deployment's ${twin.inferenceProfiles.size} application profiles (${profileList})`);
        expect(line).toContain('aws iam list-role-policies --role-name WorkflowStep');
      }
      expect(stepLines.find((line) => line.startsWith('us.amazon.nova-micro-v1:0 '))).toContain(
        `most likely the cross-region profile the application profile copies (${STEP_PROBES[1][2]})`,
      );
      expect(checkOf(report, 'step-model').calls).toMatchObject(
        STEP_PROBES.map(([model]) => ({ model, status: 'fail', input_tokens: null, usd: null, execution_id: expect.any(String) })),
      );
      expect(twin.accessDenials.filter((denial) => denial.principal === 'WorkflowStep')).toEqual(
        STEP_PROBES.map(([, , copied]) => ({
          principal: 'WorkflowStep',
          action: 'bedrock:InvokeModelWithResponseStream',
          resource: copied,
        })),
      );

      // The execution left waiting at its approval was rejected; the link, key and publication are gone or revoked.
      expect(report.checks.some((check) => check.check === 'cleanup')).toBe(false);
      const left = await leftovers(twin, report);
      expect(left.links).toEqual(['revoked']);
      expect(left.keys).toEqual(['revoked']);
      expect(left.activePublication).toBeUndefined();
      // The workflow check's execution, rejected, and the step-model check's two.
      expect(left.runStatuses).toHaveLength(3);
      expect(left.runStatuses).not.toContain('interrupted');
    },
    VERIFY_TIMEOUT_MS,
  );

  it(
    'skips both model checks with --skip-models: no model is called, not even by the step function',
    async () => {
      process.env.DATA_DIR = twin.dataDir;
      const modelCalls = twin.bedrock.requests.length;
      const stepDenials = twin.accessDenials.filter((denial) => denial.principal === 'WorkflowStep').length;
      const result = await runCli(['verify', '--skip-models', '--json']);
      const report = JSON.parse(result.stdout) as Report;

      expect(result.exitCode).toBe(1);
      for (const name of ['models', 'step-model'])
        expect(checkOf(report, name)).toMatchObject({ status: 'skip', detail: 'skipped (--skip-models)' });
      expect(twin.bedrock.requests).toHaveLength(modelCalls);
      expect(twin.accessDenials.filter((denial) => denial.principal === 'WorkflowStep')).toHaveLength(stepDenials);
    },
    VERIFY_TIMEOUT_MS,
  );
});

/** Polls `read` until it answers something, failing when `gaveUp` settles first (the process ended) or after a minute. */
async function waitFor<T>(read: () => Promise<T | undefined>, gaveUp: Promise<unknown>): Promise<T> {
  let ended = false;
  void gaveUp.then(() => (ended = true));
  const deadline = Date.now() + 120_000;
  for (;;) {
    const found = await read();
    if (found !== undefined) return found;
    if (ended || Date.now() > deadline)
      throw new Error(ended ? 'the CLI ended before the awaited state' : 'the awaited state did not come in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

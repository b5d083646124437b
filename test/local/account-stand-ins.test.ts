import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BedrockRuntimeClient, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import {
  CostExplorerClient,
  ListCostAllocationTagsCommand,
  UpdateCostAllocationTagsStatusCommand,
  type CostAllocationTagStatusEntry,
} from '@aws-sdk/client-cost-explorer';
import { GetAccountSettingsCommand, LambdaClient, ListFunctionsCommand } from '@aws-sdk/client-lambda';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeFunctions } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';
import { STACK_TAG_KEYS } from '#lib/twin/cost-explorer-stand-in.ts';
import { LOCAL_CREDENTIALS } from '#lib/twin/stores.ts';
import { readLiveTwinFile, type TwinFile } from '#lib/twin/twin-file.ts';
import { startLocalTwin, type LocalTwin } from '#lib/twin/twin.ts';

/**
 * What `admin verify` asks a deployed stack's account right after `cdk deploy`, answered by the twin as AWS answers:
 * the cost allocation tags of the stack's tags (Cost Explorer), the account's Lambda concurrency (GetAccountSettings),
 * and one call per allowed model through its application inference profile (Bedrock Runtime), each through the
 * endpoint `$DATA_DIR/twin.json` names, with the operator's credentials; a function's role may do none of the first two.
 */
const CONCURRENCY_LIMIT = 250;
/** The step function: the role allowed the most (Bedrock), and still none of these. */
const STEP_FUNCTION = taskFunctions.find((task) => task.invokesBedrock)!.id;

let dataDir: string;
let twin: LocalTwin;
let file: TwinFile;
const start = async () => {
  twin = await startLocalTwin({ dataDir, host: '127.0.0.1', port: 0, lambdaConcurrencyLimit: CONCURRENCY_LIMIT });
  file = readLiveTwinFile(dataDir)!;
};
const clientConfig = (endpoint: string, credentials = LOCAL_CREDENTIALS) => ({
  endpoint,
  region: file.region,
  credentials,
  maxAttempts: 1,
});
const costExplorer = (credentials = LOCAL_CREDENTIALS) => new CostExplorerClient(clientConfig(file.cost_explorer_endpoint, credentials));
const lambda = (credentials = LOCAL_CREDENTIALS) => new LambdaClient(clientConfig(file.lambda_endpoint, credentials));
const failure = (sent: Promise<unknown>) =>
  sent.then(
    () => {
      throw new Error('the call was answered, not refused');
    },
    (error: Error & { $metadata?: { httpStatusCode?: number } }) => error,
  );
const tags = async (input: ConstructorParameters<typeof ListCostAllocationTagsCommand>[0] = {}) =>
  (await costExplorer().send(new ListCostAllocationTagsCommand(input))).CostAllocationTags ?? [];
const statusOf = async (key: string) => (await tags({ TagKeys: [key] }))[0]?.Status;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'twin-account-'));
  await start();
});
afterAll(async () => {
  await twin?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the twin file', () => {
  it('names the Bedrock, Cost Explorer and Lambda front doors, and the step function’s own map of inference profiles', () => {
    expect(file).toMatchObject({
      bedrock_endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      cost_explorer_endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      lambda_endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
    });
    expect(file.inference_profiles).toEqual(Object.fromEntries(twin.inferenceProfiles));
    expect(Object.keys(file.inference_profiles).length).toBeGreaterThan(0);
    expect(new Set([file.bedrock_endpoint, file.cost_explorer_endpoint, file.lambda_endpoint, file.ssm_endpoint]).size).toBe(4);
  });

  it('leads the operator to a model: ConverseStream through a profile ARN of the map at bedrock_endpoint answers', async () => {
    const [model, profileArn] = Object.entries(file.inference_profiles)[0]!;
    const bedrock = new BedrockRuntimeClient({ ...clientConfig(file.bedrock_endpoint), requestHandler: new NodeHttpHandler() });

    const response = await bedrock.send(
      new ConverseStreamCommand({
        modelId: profileArn,
        messages: [{ role: 'user', content: [{ text: 'ping' }] }],
        inferenceConfig: { maxTokens: 16 },
      }),
    );
    let text = '';
    let stopReason: string | undefined;
    for await (const event of response.stream ?? []) {
      text += event.contentBlockDelta?.delta?.text ?? '';
      stopReason ??= event.messageStop?.stopReason;
    }

    expect(text).toContain('ping');
    expect(stopReason).toBeDefined();
    expect(twin.bedrock.requests).toEqual([
      expect.objectContaining({ operation: 'ConverseStream', modelId: model, invokedAs: profileArn }),
    ]);
  });
});

describe('the cost allocation tags (Cost Explorer)', () => {
  // A synthesis takes seconds (more on a loaded machine): the twin may not import the stack, so this ties them.
  it('lists exactly the user-defined tag keys the CDK stack puts on its resources', () => {
    const stack = new PlatformStack(
      new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } }),
      'Tags',
      { env: { region: 'us-east-1' } },
    );
    const resources = Object.values(Template.fromStack(stack).toJSON().Resources as Record<string, { Properties?: { Tags?: unknown } }>);
    const keys = new Set<string>();
    for (const resource of resources) {
      const tagged = resource.Properties?.Tags ?? [];
      for (const key of Array.isArray(tagged) ? tagged.map((tag: { Key: string }) => tag.Key) : Object.keys(tagged)) keys.add(key);
    }

    expect([...keys].sort()).toEqual([...STACK_TAG_KEYS].sort());
  }, 60_000);

  it('lists the stack’s keys as user-defined and inactive after the deploy, used this month', async () => {
    const listed = await tags();

    expect(listed.map((tag) => tag.TagKey)).toEqual([...STACK_TAG_KEYS].sort());
    const project = listed.find((tag) => tag.TagKey === 'Project');
    expect(project).toMatchObject({
      Type: 'UserDefined',
      Status: 'Inactive',
      LastUsedDate: expect.stringMatching(/^\d{4}-\d{2}-01T00:00:00Z$/),
    });
    expect(project?.LastUpdatedDate).toBeUndefined();
    expect(await tags({ Type: 'AWSGenerated' })).toEqual([]);
  });

  it('activates Project, lists it Active, and keeps it active across a restart on the same data directory', async () => {
    const { Errors } = await costExplorer().send(
      new UpdateCostAllocationTagsStatusCommand({ CostAllocationTagsStatus: [{ TagKey: 'Project', Status: 'Active' }] }),
    );

    expect(Errors).toEqual([]);
    expect(await tags({ Status: 'Active' })).toEqual([
      expect.objectContaining({
        TagKey: 'Project',
        Status: 'Active',
        LastUpdatedDate: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
      }),
    ]);
    expect(await statusOf('CostCenter')).toBe('Inactive');

    await twin.close();
    await start();

    expect(await statusOf('Project')).toBe('Active');
    expect(await statusOf('Component')).toBe('Inactive');
  });

  it('answers an error entry for a key no deployed resource carries, and updates the others of the request', async () => {
    const { Errors } = await costExplorer().send(
      new UpdateCostAllocationTagsStatusCommand({
        CostAllocationTagsStatus: [
          { TagKey: 'NeverDeployed', Status: 'Active' },
          { TagKey: 'CostCenter', Status: 'Active' },
        ],
      }),
    );

    expect(Errors).toEqual([
      { TagKey: 'NeverDeployed', Code: 'TagKeysNotFoundException', Message: 'Failed to update Cost Allocation Tag: NeverDeployed' },
    ]);
    expect(await tags({ TagKeys: ['NeverDeployed'] })).toEqual([]);
    expect(await statusOf('CostCenter')).toBe('Active');
    await costExplorer().send(
      new UpdateCostAllocationTagsStatusCommand({ CostAllocationTagsStatus: [{ TagKey: 'CostCenter', Status: 'Inactive' }] }),
    );
    expect(await statusOf('CostCenter')).toBe('Inactive');
  });

  it('pages with MaxResults and a NextToken, and refuses a token it did not write', async () => {
    const first = await costExplorer().send(new ListCostAllocationTagsCommand({ MaxResults: 2 }));
    const second = await costExplorer().send(new ListCostAllocationTagsCommand({ MaxResults: 2, NextToken: first.NextToken }));

    expect([...(first.CostAllocationTags ?? []), ...(second.CostAllocationTags ?? [])].map((tag) => tag.TagKey)).toEqual(
      [...STACK_TAG_KEYS].sort(),
    );
    expect(second.NextToken).toBeUndefined();
    expect((await failure(costExplorer().send(new ListCostAllocationTagsCommand({ NextToken: 'made-up' })))).name).toBe(
      'InvalidNextTokenException',
    );
  });

  it('refuses what the service model refuses with ValidationException: MaxResults out of 1-1000, 21 status entries, no entries', async () => {
    const entries = (count: number): CostAllocationTagStatusEntry[] =>
      Array.from({ length: count }, (_, i) => ({ TagKey: `Key${i}`, Status: 'Active' }));
    const refusals = await Promise.all([
      failure(costExplorer().send(new ListCostAllocationTagsCommand({ MaxResults: 0 }))),
      failure(costExplorer().send(new ListCostAllocationTagsCommand({ MaxResults: 1001 }))),
      failure(costExplorer().send(new ListCostAllocationTagsCommand({ TagKeys: [] }))),
      failure(costExplorer().send(new UpdateCostAllocationTagsStatusCommand({ CostAllocationTagsStatus: entries(21) }))),
      failure(costExplorer().send(new UpdateCostAllocationTagsStatusCommand({ CostAllocationTagsStatus: [] }))),
    ]);

    for (const refusal of refusals)
      expect({ name: refusal.name, status: refusal.$metadata?.httpStatusCode }).toEqual({ name: 'ValidationException', status: 400 });
    expect(refusals[0].message).toBe(
      "1 validation error detected: Value '0' at 'maxResults' failed to satisfy constraint: Member must have value greater than or equal to 1",
    );
    expect(refusals[3].message).toMatch(
      /at 'costAllocationTagsStatus' failed to satisfy constraint: Member must have length less than or equal to 20$/,
    );
    // Twenty entries are within the model: the unknown keys come back as error entries.
    const twenty = await costExplorer().send(new UpdateCostAllocationTagsStatusCommand({ CostAllocationTagsStatus: entries(20) }));
    expect(twenty.Errors).toHaveLength(20);
  });

  it('answers an operation it does not serve with UnknownOperationException, as AWS JSON services do', async () => {
    const client = costExplorer();
    client.middlewareStack.add(
      (next) => (args) => {
        (args.request as { headers: Record<string, string> }).headers['x-amz-target'] =
          'AWSInsightsIndexService.GetCostAndUsageOfEverything';
        return next(args);
      },
      { step: 'build' },
    );

    const refusal = await failure(client.send(new ListCostAllocationTagsCommand({})));

    expect({ name: refusal.name, status: refusal.$metadata?.httpStatusCode }).toEqual({ name: 'UnknownOperationException', status: 400 });
  });
});

describe('the account settings (Lambda)', () => {
  it('answers the configured concurrency quota, all of it unreserved, and the functions the twin hosts', async () => {
    const settings = await lambda().send(new GetAccountSettingsCommand({}));

    expect(settings.AccountLimit).toEqual({
      TotalCodeSize: 80_530_636_800,
      CodeSizeUnzipped: 262_144_000,
      CodeSizeZipped: 52_428_800,
      ConcurrentExecutions: CONCURRENCY_LIMIT,
      UnreservedConcurrentExecutions: CONCURRENCY_LIMIT,
    });
    // A function per route but where routes share one (an API's documentation routes do), and a function per task.
    expect(settings.AccountUsage).toEqual({ TotalCodeSize: 0, FunctionCount: routeFunctions().length + taskFunctions.length });
  });

  it('answers any other Lambda operation with 404', async () => {
    const refusal = await failure(lambda().send(new ListFunctionsCommand({})));

    expect({ name: refusal.name, status: refusal.$metadata?.httpStatusCode }).toEqual({ name: 'UnknownOperationException', status: 404 });
  });

  it('refuses a concurrency quota that is not a positive whole number before anything starts', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'twin-account-'));
    try {
      await expect(startLocalTwin({ dataDir: elsewhere, host: '127.0.0.1', port: 0, lambdaConcurrencyLimit: 0 })).rejects.toThrow(
        /lambdaConcurrencyLimit/,
      );
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});

describe('a function’s role', () => {
  it('may not list or update cost allocation tags, nor read the account settings: AccessDeniedException, as each service answers it', async () => {
    const keys = twin.credentialsOf(STEP_FUNCTION);
    const before = twin.accessDenials.length;

    const refusals = await Promise.all([
      failure(costExplorer(keys).send(new ListCostAllocationTagsCommand({}))),
      failure(
        costExplorer(keys).send(
          new UpdateCostAllocationTagsStatusCommand({ CostAllocationTagsStatus: [{ TagKey: 'Project', Status: 'Inactive' }] }),
        ),
      ),
      failure(lambda(keys).send(new GetAccountSettingsCommand({}))),
    ]);

    expect(refusals.map((refusal) => ({ name: refusal.name, status: refusal.$metadata?.httpStatusCode }))).toEqual([
      { name: 'AccessDeniedException', status: 400 },
      { name: 'AccessDeniedException', status: 400 },
      { name: 'AccessDeniedException', status: 403 },
    ]);
    for (const [refusal, action] of refusals.map(
      (refusal, i) =>
        [refusal, ['ce:ListCostAllocationTags', 'ce:UpdateCostAllocationTagsStatus', 'lambda:GetAccountSettings'][i]!] as const,
    )) {
      expect(refusal.message).toBe(
        `User: arn:aws:sts::000000000000:assumed-role/${STEP_FUNCTION}/${STEP_FUNCTION} is not authorized to perform: ${action} on resource: * because no identity-based policy allows the ${action} action`,
      );
    }
    expect(
      twin.accessDenials
        .slice(before)
        .map((denial) => denial.action)
        .sort(),
    ).toEqual(['ce:ListCostAllocationTags', 'ce:UpdateCostAllocationTagsStatus', 'lambda:GetAccountSettings']);
    expect(await statusOf('Project')).toBe('Active');
  });
});

import { randomBytes } from 'node:crypto';
import { nextNightlyStart } from '#shared/collection-night.ts';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  API_STAGE,
  functionIdOf,
  gatewayOf,
  routeFunctions,
  routeTimeoutSeconds,
  routes as productRoutes,
  WEBHOOK_DEFAULT_ROUTE,
  type Route,
} from '#functions/routes.ts';
import { taskFunctions as productTaskFunctions, type TaskFunction } from '#functions/task-functions.ts';
import { BUCKET_PREFIXES, STATE_MACHINE_NAMES, TABLE_ENV, type StateMachineName, type TableName } from '#shared/resources.ts';
import { BODY_TRANSFER_TIMEOUT_MS } from '#shared/limits.ts';
import type { Server } from 'node:http';
import { createApiServer, type BoundRoute, type ServedApiRequest } from './http-server.ts';
import { startFrontDoor, type AccessDenial, type LocalPrincipal, type LocalService, type ServedRequest } from './iam/front-door.ts';
import { ADMINISTRATOR_POLICY, functionPolicy, type FunctionDeclaration } from './iam/function-policy.ts';
import { functionEnvironment, type LocalCredentials, type LocalEndpoints } from './lambda/function-environment.ts';
import { LocalLambda } from './lambda/function-host.ts';
import {
  LOCAL_ACCOUNT,
  LOCAL_COLLECTION_STATE_MACHINE_ARN,
  LOCAL_SECRETS_PREFIX,
  LOCAL_STATE_MACHINE_ARN,
  localFunctionArn,
  localStateMachineArn,
} from './local-arns.ts';
import { startBedrockStandIn, type BedrockStandIn } from './bedrock-stand-in.ts';
import { createLocalInferenceProfiles, localApplicationProfile } from './bedrock-profiles.ts';
import { parseBedrockModels } from '#lib/cdk/bedrock-models.ts';
import { startSsmStandIn } from './ssm-stand-in.ts';
import { STACK_TAG_KEYS, startCostExplorerStandIn } from './cost-explorer-stand-in.ts';
import { DEFAULT_LAMBDA_CONCURRENCY_LIMIT, startLambdaAccountStandIn } from './lambda-account-stand-in.ts';
import { startCloudWatchStandIn } from './cloudwatch-stand-in.ts';
import { LOCAL_ALARM_TOPIC_ARN, localAlarms } from './local-alarms.ts';
import { createLocalTopic, type LocalTopic } from './sns-stand-in.ts';
import { alarmTopicPolicyStatements, type ResourcePolicyStatement } from '#lib/cdk/alarm-topic-policy.ts';
import { LOCAL_STACK_NAME } from './local-names.ts';
import { LocalStepFunctions, type LocalFunction } from './sfn-stand-in.ts';
import { MAX_TWIN_STREAM_HOLD_BYTES } from './lambda-streaming.ts';
import { startStepFunctionsServer } from './sfn-stand-in-server.ts';
import { LOCAL_BUCKET, LOCAL_CREDENTIALS, LOCAL_REGION, localTableName, startLocalStores } from './stores.ts';
import { removeTwinFile, writeTwinFile, type TwinFile } from './twin-file.ts';
import { executionLine, faultLine, requestLine } from './twin-log.ts';
import { checkTwinPort, twinPortOf, type TwinPortService } from './twin-ports.ts';
import { NO_FAULTS, type FaultKind, type FaultPlan } from './faults.ts';

const FUNCTIONS_DIR = resolve(fileURLToPath(new URL('../../functions/', import.meta.url)));
/** The ASL file CDK deploys for each state machine. */
const definitionFileOf = (machine: StateMachineName) => fileURLToPath(new URL(`../../statemachines/${machine}.asl.json`, import.meta.url));
/** What CDK gives a function whose entry names no memory size (lib/cdk/constructs/handler-function.ts). */
const FUNCTION_MEMORY_MB = 256;

export interface LocalTwinOptions {
  dataDir: string;
  host: string;
  /**
   * 0 picks free ports for everything. Otherwise each stand-in listens at its offset from it (twin-ports.ts: DynamoDB
   * port+1 up to CloudWatch port+8), and a port without room for them all is refused before any starts.
   */
  port: number;
  /** Only tests shorten this; the default is the webhook API's 30 s to receive a body (then 408). */
  bodyTimeoutMs?: number;
  /** Only tests shorten the state machine's Retry intervals. */
  retryIntervalMs?: number;
  /** The stage prefix of the AWS-shaped URLs (`/prod/api/...`). */
  stage?: string;
  /** REST response streaming's idle limit; tests shorten it to seconds. */
  streamIdleTimeoutMs?: number;
  /**
   * Hold a streaming function's bytes until this many wait, or the response ends, as Lambda has been reported to
   * (lambda-streaming.ts; `LAMBDA_STREAM_HOLD_BYTES`, 100 KiB, is the largest report). Default 0: nothing is held,
   * as nothing measured says API Gateway's REST streaming holds. `npm start` takes it from `TWIN_STREAM_HOLD_BYTES`.
   */
  streamHoldBytes?: number;
  /**
   * Tell a streaming function that its caller left, which Lambda never does (lambda-streaming.ts,
   * `TWIN_STREAM_CALLER_GONE`). Default false: as on Lambda, the function serves its stream to its end, writing to nobody.
   */
  streamCallerGone?: boolean;
  /**
   * `npm start`: fire the nightly collection at start of the night in the collection's zone (shared/collection-night.ts), as the Scheduler
   * schedule does on AWS. Tests call `runNightly`.
   */
  nightlySchedule?: boolean;
  /** Every request a function made to a store, with its timing (tests and the bench count round trips). */
  onStoreRequest?: (served: ServedRequest) => void;
  /** Every log line of every function, with the function's name (tests look for what must never be logged). */
  onFunctionLog?: (functionName: string, line: string) => void;
  /**
   * A line per API request as its response ends (twin-log.ts: time, method, path with its secrets cut, status,
   * function, duration, `cold`); `npm start` prints them. Unset, the server does no per-request work for it.
   */
  onRequestLine?: (line: string) => void;
  /** A line as each Step Functions execution starts, resumes after a restart, and ends (with its status and duration). */
  onExecutionLine?: (line: string) => void;
  /**
   * `TWIN_FAULTS` (faults.ts): AWS's throttles and server errors on some of the functions' store calls (never the
   * operator's), and failed, crashed or delayed invocations. Unset, nothing is drawn and nothing injected.
   */
  faults?: FaultPlan;
  /** A line per injected fault (twin-log.ts: its kind, the call or function it hit, what the caller got). */
  onFaultLine?: (line: string) => void;
  /** Only tests replace the route or task tables, to show a function refused what its entry does not declare. */
  routes?: readonly Route[];
  taskFunctions?: readonly TaskFunction[];
  /**
   * The deployment's Bedrock allow-list, as CDK's `bedrockModels` context: the step function may invoke only these.
   * Held to the rules synth holds the context to (within the catalog, none past its end of life at `now`).
   */
  bedrockModels?: readonly string[];
  /**
   * Only tests: what the step function's role lists in its `bedrock:InferenceProfileArn` condition. `application`, the
   * default, is what CDK writes: the deployment's application inference profiles. `copied` lists what each profile copies
   * instead (the foundation model, or the cross-region profile), a role naming the wrong ARNs: every model call the step
   * function makes through a profile is refused, as on AWS.
   */
  stepRoleCondition?: 'application' | 'copied';
  /** The Bedrock stand-in's clock, which decides when a model reaches its end of life (and Cost Explorer's dates). */
  now?: () => number;
  /**
   * The account's Lambda concurrent executions quota that GetAccountSettings answers (default 1000, AWS's default;
   * new accounts may get less). The twin reserves none for a function, and does not hold invocations to it.
   */
  lambdaConcurrencyLimit?: number;
  /**
   * Only tests: rewrites the alarm topic's policy (by default the statements CDK deploys, lib/cdk/alarm-topic-policy.ts),
   * e.g. to leave out CloudWatch's statement and show every alarm action then fails.
   */
  alarmTopicPolicy?: (statements: ResourcePolicyStatement[]) => ResourcePolicyStatement[];
}

/** API Gateway's idle limit on streamed responses of a REGIONAL endpoint. */
const STREAM_IDLE_TIMEOUT_MS = 5 * 60_000;
/** Hand-off announcements under DATA_DIR, one JSON line each (on AWS: events on the stack's hand-off bus). */
export const HANDOFF_EVENTS_FILE_NAME = 'handoffs.jsonl';

export interface LocalTwin {
  /** The Published Workflow API. */
  url: string;
  /** The webhook API: an HTTP API on a host (port) of its own. */
  webhookUrl: string;
  twin: TwinFile;
  stepFunctions: LocalStepFunctions;
  /** The Bedrock Runtime stand-in, which tests script per model. */
  bedrock: BedrockStandIn;
  /** The alarm topic, which the CloudWatch stand-in's alarms publish their actions to (its messages, for tests). */
  alarmTopic: LocalTopic;
  /**
   * The application inference profiles the twin created for its Bedrock allow-list: model id → ARN (the step function's
   * `BEDROCK_INFERENCE_PROFILES`).
   */
  inferenceProfiles: ReadonlyMap<string, string>;
  /** Every call a front door refused, newest last: which function, which action, on what. */
  accessDenials: AccessDenial[];
  /** The environment of a function allowed everything, with the operator's credentials (tests import handlers in-process). */
  operatorEnvironment: Record<string, string>;
  /** The credentials a route or task function signs with. */
  credentialsOf(functionId: string): LocalCredentials;
  /** How many invocations of a function are still running their handler. */
  invocationsInFlight(functionId: string): number;
  /** The most memory a function's environments have used so far, counted as against its memory size (MB). */
  maxMemoryUsedMb(functionId: string): number;
  /** Faults injected so far, by kind: every kind present, all 0 without a plan. */
  faultCounts(): Record<FaultKind, number>;
  /**
   * Fires the nightly collection trigger now, as the schedule does at the start of the night (at its deadline hour with `{check:
   * 'deadline'}`).
   */
  runNightly(input?: object): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * The local twin: the same handlers behind the same route table, with the real AWS SDK clients pointed at embedded
 * API-compatible stores. Each function runs isolated as on Lambda (lambda/function-host.ts), with its own environment
 * and credentials, and each store sits behind an IAM front door (iam/front-door.ts) that allows a function exactly
 * what its route or task entry declares, which is what CDK grants it.
 */
export async function startLocalTwin(options: LocalTwinOptions): Promise<LocalTwin> {
  // Checked before anything starts: a list CDK synth refuses starts no twin either.
  const bedrockModels = parseBedrockModels(options.bedrockModels, LOCAL_REGION, (options.now ?? Date.now)());
  const lambdaConcurrencyLimit = options.lambdaConcurrencyLimit ?? DEFAULT_LAMBDA_CONCURRENCY_LIMIT;
  if (!Number.isSafeInteger(lambdaConcurrencyLimit) || lambdaConcurrencyLimit < 1) {
    throw new Error(`lambdaConcurrencyLimit must be a positive whole number of concurrent executions, got ${lambdaConcurrencyLimit}`);
  }
  const streamHoldBytes = options.streamHoldBytes ?? 0;
  if (!Number.isSafeInteger(streamHoldBytes) || streamHoldBytes < 0 || streamHoldBytes > MAX_TWIN_STREAM_HOLD_BYTES) {
    throw new Error(`streamHoldBytes must be a whole number of bytes from 0 to ${MAX_TWIN_STREAM_HOLD_BYTES}, got ${streamHoldBytes}`);
  }
  const routes = options.routes ?? productRoutes;
  const { onRequestLine, onExecutionLine } = options;
  const taskFunctions = options.taskFunctions ?? productTaskFunctions;
  checkTwinPort(options.port);
  const stores = await startLocalStores(options.dataDir, { dynamodb: 0, s3: 0 });
  const tables = Object.fromEntries((Object.keys(TABLE_ENV) as TableName[]).map((table) => [table, localTableName(table)])) as Record<
    TableName,
    string
  >;
  const functions: Record<string, LocalFunction> = {};
  // One stand-in, one definition per state machine, each with only its own tasks' substitutions (as CDK writes them).
  const stepFunctions = new LocalStepFunctions({
    stateMachines: STATE_MACHINE_NAMES.map((machine) => {
      const own = taskFunctions.filter((task) => task.machine === machine);
      return {
        stateMachineArn: localStateMachineArn(machine),
        definitionFile: definitionFileOf(machine),
        substitutions: {
          Partition: 'aws',
          ...Object.fromEntries(own.flatMap((task) => (task.arnSubstitution ? [[task.arnSubstitution, localFunctionArn(task.id)]] : []))),
        },
        executionEndedSubscribers: () =>
          own.filter((task) => task.trigger === 'executionEnded').map((task) => functions[localFunctionArn(task.id)]!),
      };
    }),
    functions,
    dataDir: options.dataDir,
    retryIntervalMs: options.retryIntervalMs,
    onExecution: onExecutionLine ? (activity) => onExecutionLine(executionLine(activity)) : undefined,
  });
  const stepFunctionsServer = await startStepFunctionsServer(stepFunctions, 0);
  const ssm = await startSsmStandIn({ dataDir: options.dataDir });
  const bedrock = await startBedrockStandIn({ now: options.now });
  // What an operator checks after a deploy: the stack's tags as cost allocation tags of the payer account, and the account's Lambda quota.
  const costExplorer = await startCostExplorerStandIn({ dataDir: options.dataDir, tagKeys: STACK_TAG_KEYS, now: options.now });
  // What CloudFormation creates on AWS: one tagged application inference profile per allowed model, through the same
  // function (lib/cdk/bedrock-models.ts); the step function calls Bedrock through them here too.
  const inferenceProfiles = createLocalInferenceProfiles(bedrockModels);
  const conditionArns =
    options.stepRoleCondition === 'copied'
      ? [...inferenceProfiles.profiles.values()].map((arn) => localApplicationProfile(arn)!.copyFrom)
      : undefined;

  const apiFunctions = routeFunctions(routes);
  const declarations: readonly FunctionDeclaration[] = [...apiFunctions, ...taskFunctions];
  const credentials = new Map(declarations.map((declaration) => [declaration.id, newCredentials(declaration.id)]));
  const lambdaAccount = await startLambdaAccountStandIn({ concurrencyLimit: lambdaConcurrencyLimit, functionCount: declarations.length });
  // The stack's alarm topic with the policy CDK deploys, and a representative part of its alarms (local-alarms.ts).
  const topicPolicy = alarmTopicPolicyStatements({
    partition: 'aws',
    region: LOCAL_REGION,
    account: LOCAL_ACCOUNT,
    stackName: LOCAL_STACK_NAME,
    topicArn: LOCAL_ALARM_TOPIC_ARN,
  });
  const alarmTopic = createLocalTopic({ arn: LOCAL_ALARM_TOPIC_ARN, policy: options.alarmTopicPolicy?.(topicPolicy) ?? topicPolicy });
  const cloudWatch = await startCloudWatchStandIn({
    alarms: localAlarms(declarations.map((declaration) => declaration.id)),
    topics: [alarmTopic],
    now: options.now,
  });
  const principals: LocalPrincipal[] = [
    { name: 'Operator', ...LOCAL_CREDENTIALS, policy: ADMINISTRATOR_POLICY, faultFree: true },
    ...declarations.map((declaration) => ({
      name: declaration.id,
      ...credentials.get(declaration.id)!,
      policy: functionPolicy(declaration, bedrockModels, inferenceProfiles.profiles, conditionArns),
    })),
  ];
  const accessDenials: AccessDenial[] = [];
  const { faults, onFaultLine } = options;
  const stopFaultLines = faults && onFaultLine ? faults.onFault((fault) => onFaultLine(faultLine(fault))) : undefined;
  // The account's stand-ins (Cost Explorer, Lambda's settings) are the operator's alone: no fault there.
  const frontDoor = (service: LocalService, upstream: string, listener: TwinPortService, withFaults = true) =>
    startFrontDoor({
      service,
      upstream,
      port: twinPortOf(options.port, listener),
      principals,
      onDenied: (denial) => accessDenials.push(denial),
      onServed: options.onStoreRequest,
      faults: withFaults ? faults : undefined,
    });
  const doors = {
    dynamodb: await frontDoor('dynamodb', stores.dynamodbEndpoint, 'dynamodb'),
    s3: await frontDoor('s3', stores.s3Endpoint, 's3'),
    stepFunctions: await frontDoor('states', stepFunctionsServer.endpoint, 'stepFunctions'),
    ssm: await frontDoor('ssm', ssm.endpoint, 'ssm'),
    bedrock: await frontDoor('bedrock', bedrock.endpoint, 'bedrock'),
    costExplorer: await frontDoor('ce', costExplorer.endpoint, 'costExplorer', false),
    lambda: await frontDoor('lambda', lambdaAccount.endpoint, 'lambda', false),
    cloudWatch: await frontDoor('monitoring', cloudWatch.endpoint, 'cloudWatch', false),
  };
  const endpoints: LocalEndpoints = {
    dynamodb: doors.dynamodb.endpoint,
    s3: doors.s3.endpoint,
    stepFunctions: doors.stepFunctions.endpoint,
    ssm: doors.ssm.endpoint,
    bedrock: doors.bedrock.endpoint,
  };

  const localFiles = { handoffEvents: join(options.dataDir, HANDOFF_EVENTS_FILE_NAME) };
  const lambdas = new Map<string, LocalLambda>();
  const lambdaOf = (
    declaration: FunctionDeclaration & { handler: string; memorySize?: number },
    timeoutSeconds: number,
    streaming: boolean,
  ) => {
    const lambda = new LocalLambda({
      functionName: declaration.id,
      handlerFile: join(FUNCTIONS_DIR, declaration.handler),
      environment: functionEnvironment(declaration, endpoints, credentials.get(declaration.id)!, localFiles, inferenceProfiles.profiles),
      timeoutSeconds,
      streaming,
      streamHoldBytes: streaming ? streamHoldBytes : 0,
      streamCallerGone: streaming && options.streamCallerGone === true,
      memoryMb: declaration.memorySize ?? FUNCTION_MEMORY_MB,
      onLogLine: options.onFunctionLog ? (line) => options.onFunctionLog!(declaration.id, line) : undefined,
      faults,
    });
    lambdas.set(declaration.id, lambda);
    return lambda;
  };
  for (const task of taskFunctions) {
    const lambda = lambdaOf(task, task.timeoutSeconds, false);
    functions[localFunctionArn(task.id)] = (payload) => lambda.invoke(payload);
  }
  for (const declared of apiFunctions) lambdaOf(declared, routeTimeoutSeconds(declared), Boolean(declared.streaming));
  const bound: BoundRoute[] = routes.map((route) => ({ route, fn: lambdas.get(functionIdOf(route))! }));
  stepFunctions.resume();
  const nightly = taskFunctions.find((task) => task.trigger === 'nightly');
  const runNightly = (input: object = { source: 'local.scheduler' }) =>
    nightly ? functions[localFunctionArn(nightly.id)]!(input) : Promise.resolve(undefined);
  const nightlyTimer = options.nightlySchedule ? scheduleNightly(runNightly) : undefined;
  const serverOptions = {
    bodyTimeoutMs: options.bodyTimeoutMs ?? BODY_TRANSFER_TIMEOUT_MS,
    stage: options.stage ?? API_STAGE,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? STREAM_IDLE_TIMEOUT_MS,
    onServed: onRequestLine ? (served: ServedApiRequest) => onRequestLine(requestLine(served)) : undefined,
  };
  // Two APIs, two hosts, as on AWS: the Published Workflow API's REST API and the webhook API's HTTP API.
  const server = createApiServer(
    bound.filter(({ route }) => gatewayOf(route) === 'restApi'),
    { ...serverOptions, gateway: 'restApi' },
  );
  const webhookServer = createApiServer(
    bound.filter(({ route }) => gatewayOf(route) === 'httpApi'),
    { ...serverOptions, gateway: 'httpApi', defaultRoute: bound.find(({ route }) => route.id === WEBHOOK_DEFAULT_ROUTE) },
  );
  const listen = (listener: Server, service: TwinPortService) =>
    new Promise<string>((resolveListen, reject) => {
      listener.once('error', reject);
      listener.listen(twinPortOf(options.port, service), options.host, () =>
        resolveListen(`http://${options.host}:${(listener.address() as AddressInfo).port}`),
      );
    });
  const url = await listen(server, 'api');
  const webhookUrl = await listen(webhookServer, 'webhooks');
  const twin: TwinFile = {
    pid: process.pid,
    api_url: url,
    webhook_url: webhookUrl,
    dynamodb_endpoint: endpoints.dynamodb,
    s3_endpoint: endpoints.s3,
    step_functions_endpoint: endpoints.stepFunctions,
    ssm_endpoint: endpoints.ssm,
    bedrock_endpoint: endpoints.bedrock,
    inference_profiles: Object.fromEntries(inferenceProfiles.profiles),
    cost_explorer_endpoint: doors.costExplorer.endpoint,
    lambda_endpoint: doors.lambda.endpoint,
    cloudwatch_endpoint: doors.cloudWatch.endpoint,
    secrets_prefix: LOCAL_SECRETS_PREFIX,
    state_machine_arn: LOCAL_STATE_MACHINE_ARN,
    collection_state_machine_arn: LOCAL_COLLECTION_STATE_MACHINE_ARN,
    region: LOCAL_REGION,
    tables,
    bucket: LOCAL_BUCKET,
  };
  writeTwinFile(options.dataDir, twin);
  const everything: FunctionDeclaration = {
    id: 'Operator',
    tables: Object.fromEntries(Object.keys(TABLE_ENV).map((table) => [table, 'readWrite'])),
    buckets: { bodies: Object.fromEntries(BUCKET_PREFIXES.map((prefix) => [prefix, 'readWriteDelete'])) },
    stateMachines: Object.fromEntries(STATE_MACHINE_NAMES.map((machine) => [machine, ['start', 'stop', 'taskResponse']])),
  };
  return {
    url,
    webhookUrl,
    twin,
    stepFunctions,
    bedrock,
    inferenceProfiles: inferenceProfiles.profiles,
    alarmTopic,
    accessDenials,
    operatorEnvironment: functionEnvironment(everything, endpoints, LOCAL_CREDENTIALS, localFiles),
    runNightly,
    faultCounts: () => faults?.counts() ?? { ...NO_FAULTS },
    invocationsInFlight(functionId) {
      const lambda = lambdas.get(functionId);
      if (!lambda) throw new Error(`No function ${functionId} on the twin`);
      return lambda.inFlight;
    },
    maxMemoryUsedMb(functionId) {
      const lambda = lambdas.get(functionId);
      if (!lambda) throw new Error(`No function ${functionId} on the twin`);
      return lambda.maxMemoryUsedMb;
    },
    credentialsOf(functionId) {
      const found = credentials.get(functionId);
      if (!found) throw new Error(`No function ${functionId} on the twin`);
      return found;
    },
    async close() {
      nightlyTimer?.stop();
      stopFaultLines?.();
      for (const listener of [server, webhookServer]) {
        listener.closeAllConnections();
        await new Promise<void>((resolveClose) => listener.close(() => resolveClose()));
      }
      stepFunctions.close();
      await Promise.all([...lambdas.values()].map((lambda) => lambda.close()));
      await Promise.all(Object.values(doors).map((door) => door.close()));
      stepFunctionsServer.server.closeAllConnections();
      await new Promise<void>((resolveClose) => stepFunctionsServer.server.close(() => resolveClose()));
      await Promise.all([stores.close(), ssm.close(), bedrock.close(), costExplorer.close(), lambdaAccount.close(), cloudWatch.close()]);
      inferenceProfiles.remove();
      removeTwinFile(options.dataDir, twin);
    },
  };
}

/** A key pair per function, new at every start: what the function's execution role would hand it on AWS. */
function newCredentials(functionId: string): LocalCredentials {
  return { accessKeyId: `LOCAL${functionId.toUpperCase()}`, secretAccessKey: randomBytes(30).toString('base64') };
}

function scheduleNightly(fire: () => Promise<unknown>): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(
      () => {
        fire().catch((error: unknown) => console.error('nightly collection trigger failed', error));
        arm();
      },
      nextNightlyStart(Date.now()) - Date.now() + 1,
    );
    timer.unref();
  };
  arm();
  return { stop: () => clearTimeout(timer) };
}

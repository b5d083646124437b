import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { functionIdOf, gatewayOf, routeFunctions, routes } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { TABLE_ACTIONS, TABLE_ENV, type Access, type TableName } from '#shared/resources.ts';
import {
  APPROVAL_TIMEOUT_SECONDS,
  STREAM_PROBE_MARGIN_MS,
  STREAM_PROBE_MAX_HOLD_MS,
  STREAM_PROBE_TIMEOUT_SECONDS,
} from '#shared/limits.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';
import { LAMBDA_RUNTIME } from '#lib/cdk/lambda-runtime.ts';

/**
 * Skips Lambda bundling (these tests look at the template, not the code assets; test/infra/bundles.test.ts does)
 * and aws-cdk-lib's built-in CloudFormation rule check, which only warns and costs seconds per synthesis.
 */
const templateApp = () => new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } });

let stack: PlatformStack;
let template: Template;
let nagFailure: unknown;

/** One synthesis for the whole file, with cdk-nag as on every `cdk synth`. */
beforeAll(() => {
  const app = templateApp();
  stack = new PlatformStack(app, 'Test', { env: { region: 'us-east-1' } });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  try {
    app.synth();
  } catch (error) {
    nagFailure = error;
    // The other tests still get a template; the cdk-nag test reports the findings.
    stack = new PlatformStack(templateApp(), 'Test', { env: { region: 'us-east-1' } });
  }
  template = Template.fromStack(stack);
});

function functionOf(routeId: string) {
  const fn = stack.api.functions[routeId]!;
  return { logicalId: stack.getLogicalId(fn.node.defaultChild as never), fn };
}

function policyOf(routeId: string): string {
  const fn = stack.api.functions[routeId] ?? stack.engine.functions[routeId] ?? stack.collection.functions[routeId]!;
  const roleId = stack.getLogicalId(fn.role!.node.defaultChild as never);
  const policies = template.findResources('AWS::IAM::Policy', {
    Properties: { Roles: [{ Ref: roleId }] },
  });
  return JSON.stringify(Object.values(policies));
}

describe('data', () => {
  it('creates on-demand tables with TTL, point-in-time recovery and AWS-owned-key encryption, kept on stack deletion', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', Object.keys(TABLE_ENV).length);
    const tables = template.findResources('AWS::DynamoDB::Table');
    for (const table of Object.values(tables)) {
      expect(table.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
        // Encrypted at rest with the AWS owned key (free); `true` would mean a KMS key billed per request.
        SSESpecification: { SSEEnabled: false },
      });
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.Properties.ProvisionedThroughput).toBeUndefined();
    }
  });

  it('keeps every table under the resource name it was first deployed with, so an update never replaces one', () => {
    const names = Object.keys(template.findResources('AWS::DynamoDB::Table')).map((id) => id.replace(/[0-9A-F]{8}$/, ''));
    expect(names.sort()).toEqual(
      [
        'DataApiKeysTable',
        'DataCollectionTable',
        'DataConversationsTable',
        'DataCountersTable',
        'DataExecutionsTable',
        'DataInboundEventsTable',
        'DataLinksTable',
        'DataPublicationsTable',
        'DataRunEventsTable',
        'DataUsageTable',
      ].sort(),
    );
    const outputs = Object.keys(template.toJSON().Outputs as Record<string, unknown>);
    expect(outputs).toEqual(expect.arrayContaining(['ConversationsTableName', 'RunEventsTableName', 'InboundEventsTableName']));
  });

  it('keys inbound events by (source_id, external_id), the deduplication pair, with a received-time index', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: 'source_id', KeyType: 'HASH' },
        { AttributeName: 'external_id', KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: [
        Match.objectLike({
          IndexName: 'by_received',
          Projection: Match.objectLike({ ProjectionType: 'INCLUDE' }),
        }),
      ],
    });
  });

  it('keeps bodies in an encrypted, private, TLS-only, versioned bucket that expires them after the queue retention', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      VersioningConfiguration: { Status: 'Enabled' },
      LifecycleConfiguration: {
        Rules: [
          Match.objectLike({ Prefix: 'inbound/', ExpirationInDays: 37 }),
          Match.objectLike({ Prefix: 'executions/', ExpirationInDays: 91 }),
          Match.objectLike({ Prefix: 'recordings/', ExpirationInDays: 90 }),
          Match.objectLike({ Prefix: 'handoff/', ExpirationInDays: 90 }),
        ],
      },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
  });
});

describe('api', () => {
  it('is a REGIONAL REST API with a prod stage, throttling and access logs', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'prod',
      AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }),
      MethodSettings: [Match.objectLike({ ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 })],
    });
  });

  it('has one function per route (each API documentation shares one), a REST method per published route, an HTTP API route per webhook route', () => {
    const restRoutes = routes.filter((route) => gatewayOf(route) === 'restApi');
    const webhookRoutes = routes.filter((route) => gatewayOf(route) === 'httpApi');
    template.resourceCountIs('AWS::ApiGateway::Method', restRoutes.length);
    template.resourceCountIs('AWS::Lambda::Function', routeFunctions().length + taskFunctions.length);
    expect(routeFunctions().length + taskFunctions.length).toBeLessThanOrEqual(21);
    for (const route of restRoutes) {
      template.hasResourceProperties('AWS::ApiGateway::Method', {
        HttpMethod: route.method,
        Integration: Match.objectLike({
          Type: 'AWS_PROXY',
          Uri: Match.objectLike({
            'Fn::Join': Match.arrayWith([
              Match.arrayWith([Match.objectLike({ 'Fn::GetAtt': [functionOf(functionIdOf(route)).logicalId, 'Arn'] })]),
            ]),
          }),
        }),
      });
    }
    expect(JSON.stringify(template.findResources('AWS::ApiGateway::Resource'))).not.toContain('{token}');
    // The webhook API: one HTTP API, payload format 2.0, every webhook route and a $default route (404 from its documentation function).
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    template.resourceCountIs('AWS::ApiGatewayV2::Route', webhookRoutes.length + 1);
    for (const route of webhookRoutes)
      template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: `${route.method} ${route.path}` });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: '$default' });
    const integrations = Object.values(template.findResources('AWS::ApiGatewayV2::Integration'));
    for (const integration of integrations) {
      expect(integration.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
      // No timeout written: the HTTP API's default, 30 s, is its maximum.
      expect(integration.Properties.TimeoutInMillis).toBeUndefined();
    }
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { StageName: '$default', AutoDeploy: true });
    template.hasOutput('WebhookApiUrl', {});
    template.hasOutput('ApiUrl', {});
  });

  it("answers unknown routes with 404, throttled requests and its own 5xx (a failed, crashed or timed-out function) with Retry-After, every gateway answer in both APIs' error shape", () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'MISSING_AUTHENTICATION_TOKEN',
      StatusCode: '404',
      ResponseTemplates: { 'application/json': '{"error":"Not Found","detail":"Not Found"}' },
    });
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'THROTTLED',
      ResponseParameters: { 'gatewayresponse.header.Retry-After': "'1'" },
      ResponseTemplates: { 'application/json': '{"error":"Too Many Requests","detail":"Too Many Requests"}' },
    });
    for (const type of ['DEFAULT_4XX', 'DEFAULT_5XX']) {
      template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
        ResponseType: type,
        ResponseTemplates: { 'application/json': '{"error":$context.error.messageString,"detail":$context.error.messageString}' },
      });
    }
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'DEFAULT_5XX',
      ResponseParameters: { 'gatewayresponse.header.Retry-After': "'1'" },
    });
  });

  it('adds no CORS without corsAllowedOrigins: no OPTIONS method, no CORS header on gateway responses, no CORS_ALLOWED_ORIGINS', () => {
    const methods = Object.values(template.findResources('AWS::ApiGateway::Method'));
    expect(methods.filter((method) => method.Properties.HttpMethod === 'OPTIONS')).toEqual([]);
    expect(JSON.stringify(template.findResources('AWS::ApiGateway::GatewayResponse'))).not.toContain('Access-Control');
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    expect(functions.filter((fn) => fn.Properties.Environment?.Variables?.CORS_ALLOWED_ORIGINS !== undefined)).toEqual([]);
  });

  it('hands every request body to the functions as base64, the bytes as sent', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { BinaryMediaTypes: ['*/*'] });
  });

  it('runs functions on the newest Node runtime on arm64 with tracing', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    for (const fn of Object.values(functions)) {
      expect(fn.Properties).toMatchObject({ Runtime: LAMBDA_RUNTIME.name, Architectures: ['arm64'], TracingConfig: { Mode: 'Active' } });
    }
  });
});

describe('no webhook token in traces or logs', () => {
  const stage = () => Object.values(template.findResources('AWS::ApiGateway::Stage'))[0]!.Properties;
  const tokenRoutes = routes.filter((route) => route.path.includes('{token}'));

  it('has the token routes this is about', () => {
    expect(tokenRoutes.map((route) => `${route.method} ${route.path}`)).toEqual(
      expect.arrayContaining(['POST /api/v1/webhooks/{token}/events', 'GET /api/v1/webhooks/{token}/ping']),
    );
  });

  it('turns stage tracing off: API Gateway segments would record the request path with the token', () => {
    expect(stage().TracingEnabled).toBe(false);
  });

  it('access-logs the resource path, never the request path, as one JSON object per request', () => {
    const format: string = stage().AccessLogSetting.Format;
    expect(format).toContain('$context.resourcePath');
    expect(format).not.toMatch(/\$context\.path\b/);
    expect(format).not.toContain('$context.requestOverride');
    for (const field of [
      '$context.requestId',
      '$context.identity.sourceIp',
      '$context.httpMethod',
      '$context.status',
      '$context.protocol',
      '$context.responseLength',
      '$context.integrationLatency',
      '$context.error.messageString',
    ]) {
      expect(format).toContain(field);
    }
    // Valid JSON once API Gateway has put values in (messageString comes quoted).
    const sample = JSON.parse(format.replaceAll(/\$context\.error\.messageString/g, '"x"').replaceAll(/\$context\.[A-Za-z.]+/g, 'x'));
    expect(sample.resourcePath).toBe('x');
  });

  it("access-logs the webhook API's route key, never its path, as one JSON object per request", () => {
    const stages = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stages).toHaveLength(1);
    const format: string = stages[0]!.Properties.AccessLogSettings.Format;
    expect(format).toContain('$context.routeKey');
    expect(format).not.toMatch(/\$context\.(path|rawPath)\b/);
    for (const field of ['$context.requestId', '$context.identity.sourceIp', '$context.status', '$context.integrationErrorMessage']) {
      expect(format).toContain(field);
    }
    expect(JSON.parse(format.replaceAll(/\$context\.[A-Za-z.]+/g, 'x')).route).toBe('x');
  });

  it('writes no execution logs for any method, so neither token routes nor unknown paths under a token are logged', () => {
    const settings: { ResourcePath: string; HttpMethod: string; LoggingLevel?: string; DataTraceEnabled?: boolean }[] =
      stage().MethodSettings;
    const everyMethod = settings.find((setting) => setting.ResourcePath === '/*' && setting.HttpMethod === '*');
    expect(everyMethod).toMatchObject({ LoggingLevel: 'OFF', DataTraceEnabled: false });
    for (const route of tokenRoutes) {
      // A per-method override would be keyed ~1api~1v1~1webhooks~1{token}~1events / POST.
      const override = settings.find(
        (setting) => setting.ResourcePath === route.path.replaceAll('/', '~1') && setting.HttpMethod === route.method,
      );
      expect(override?.LoggingLevel ?? 'OFF', route.path).toBe('OFF');
      expect(override?.DataTraceEnabled ?? false, route.path).toBe(false);
    }
  });

  it('has Powertools log no event and trace no response, error or outgoing URL, and loads no source map', () => {
    for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
      const variables = fn.Properties.Environment.Variables;
      expect(variables).toMatchObject({
        POWERTOOLS_LOGGER_LOG_EVENT: 'false',
        POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
        POWERTOOLS_TRACER_CAPTURE_ERROR: 'false',
        POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS: 'false',
      });
      expect(variables.NODE_OPTIONS ?? '').not.toContain('--enable-source-maps');
    }
  });
});

describe('least privilege per route', () => {
  it('gives the ping function only the links and counters tables', () => {
    const { logicalId } = functionOf('WebhookPing');
    const variables = template.findResources('AWS::Lambda::Function')[logicalId]!.Properties.Environment.Variables;
    expect(Object.keys(variables)).toEqual(expect.arrayContaining(['LINKS_TABLE', 'COUNTERS_TABLE']));
    expect(variables).not.toHaveProperty('INBOUND_EVENTS_TABLE');
    expect(variables).not.toHaveProperty('BODIES_BUCKET');
    const policy = policyOf('WebhookPing');
    expect(policy).not.toContain('s3:');
    expect(policy).not.toContain('InboundEventsTable');
  });

  it('grants each function exactly the DynamoDB actions of its declared access, the list the front door of the twin enforces', () => {
    for (const entry of [...routeFunctions(), ...taskFunctions]) {
      const fn = stack.api.functions[entry.id] ?? stack.engine.functions[entry.id] ?? stack.collection.functions[entry.id]!;
      const roleId = stack.getLogicalId(fn.role!.node.defaultChild as never);
      const statements = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap(
        (policy) => policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
      );
      const granted = new Map<TableName, string[]>();
      for (const table of Object.keys(TABLE_ENV) as TableName[]) {
        const tableId = stack.getLogicalId(stack.data.tables[table].node.defaultChild as never);
        const actions = statements
          .filter((statement) => JSON.stringify(statement.Resource).includes(`"${tableId}"`))
          .flatMap((statement) => [statement.Action].flat())
          .filter((action) => action.startsWith('dynamodb:'));
        if (actions.length > 0) granted.set(table, [...new Set(actions)].sort());
      }
      const declared = new Map(
        (Object.entries(entry.tables) as [TableName, Access][]).map(([table, access]) => [table, [...TABLE_ACTIONS[access]].sort()]),
      );
      expect(granted, entry.id).toEqual(declared);
    }
  });

  it('lets the event function write bodies under inbound/ only, with object-level actions', () => {
    const policy = policyOf('WebhookPostEvent');
    expect(policy).toContain('s3:PutObject');
    expect(policy).toContain('/inbound/*');
    expect(policy).not.toMatch(/s3:\*|s3:List|s3:PutBucket/);
  });
});

describe('workflow engine', () => {
  const workflowTasks = taskFunctions.filter((candidate) => candidate.machine === 'workflow' && candidate.arnSubstitution);
  const definition = () => {
    const machines = template.findResources('AWS::StepFunctions::StateMachine');
    expect(Object.keys(machines)).toHaveLength(2);
    return machines[stack.getLogicalId(stack.engine.stateMachine.node.defaultChild as never)]!.Properties;
  };

  it('is a Standard state machine from workflow.asl.json, with every workflow task function substituted', () => {
    const properties = definition();
    expect(properties.StateMachineType).toBe('STANDARD');
    expect(properties.TracingConfiguration).toEqual({ Enabled: true });
    const substitutions = properties.DefinitionSubstitutions;
    expect(Object.keys(substitutions).sort()).toEqual(['Partition', ...workflowTasks.map((task) => task.arnSubstitution!)].sort());
    for (const task of workflowTasks) {
      const logicalId = stack.getLogicalId(stack.engine.functions[task.id]!.node.defaultChild as never);
      expect(substitutions[task.arnSubstitution!]).toEqual({ 'Fn::GetAtt': [logicalId, 'Arn'] });
    }
    const asl = JSON.parse(readFileSync(new URL('../../statemachines/workflow.asl.json', import.meta.url), 'utf8'));
    expect(JSON.stringify(properties.DefinitionString)).toContain('waitForTaskToken');
    expect(asl.States.AwaitApproval.Resource).toBe('arn:${Partition}:states:::lambda:invoke.waitForTaskToken');
    expect(asl.States.AwaitApproval.TimeoutSeconds).toBe(APPROVAL_TIMEOUT_SECONDS);
    expect(asl.States.Pause.Type).toBe('Wait');
    expect(asl.States.RunStep.Catch[0].Next).toBe('RecordFailure');
  });

  it('lets the state machine invoke exactly its task functions', () => {
    const roleId = Object.entries(template.findResources('AWS::IAM::Role')).find(([id]) => id.includes('WorkflowStateMachineRole'))![0];
    const policy = JSON.stringify(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
    for (const task of workflowTasks) {
      expect(policy).toContain(stack.getLogicalId(stack.engine.functions[task.id]!.node.defaultChild as never));
    }
    expect(policy).toContain('lambda:InvokeFunction');
    expect(policy).not.toContain('PublishedExecute');
    expect(policy).not.toContain(stack.getLogicalId(stack.collection.functions.CollectBatch!.node.defaultChild as never));
  });

  it('grants StartExecution, StopExecution and task responses only to the routes that need them', () => {
    const grants: Record<string, string[]> = {
      PublishedExecute: ['states:StartExecution'],
      PublishedStreamWorkflow: ['states:StartExecution'],
      PublishedStopExecution: ['states:StopExecution', 'states:StartExecution'],
      PublishedApprove: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:StartExecution'],
      PublishedReject: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:StartExecution'],
    };
    for (const route of routes) {
      const policy = policyOf(functionIdOf(route));
      const expected = grants[route.id] ?? [];
      for (const action of expected) expect(policy, route.id).toContain(action);
      for (const action of ['states:StartExecution', 'states:StopExecution', 'states:SendTaskSuccess']) {
        if (!expected.includes(action)) expect(policy, `${route.id} must not have ${action}`).not.toContain(action);
      }
      const variables =
        template.findResources('AWS::Lambda::Function')[functionOf(functionIdOf(route)).logicalId]!.Properties.Environment.Variables;
      expect(Boolean(variables.STATE_MACHINE_ARN), route.id).toBe(expected.length > 0);
      // No route may start, stop or even name a collection sweep.
      expect(variables, route.id).not.toHaveProperty('COLLECTION_STATE_MACHINE_ARN');
      expect(policy, route.id).not.toContain(stack.getLogicalId(stack.collection.stateMachine.node.defaultChild as never));
    }
  });

  it('logs state machine errors to a log group under /aws/vendedlogs/, which needs no resource policy entry of its own', () => {
    const logGroupId = stack.getLogicalId(stack.engine.node.findChild('StateMachineLogs').node.defaultChild as never);
    const name = JSON.stringify(template.findResources('AWS::Logs::LogGroup')[logGroupId]!.Properties.LogGroupName);
    // `/aws/vendedlogs/states/<stack>-workflow-<stack uuid>`: a stack created again gets a new group.
    expect(name).toContain('"/aws/vendedlogs/states/Test-workflow-"');
    expect(name).toContain('AWS::StackId');
    const destination = JSON.stringify(definition().LoggingConfiguration);
    expect(destination).toContain(logGroupId);
  });

  it('streams the blocking execute response for up to 15 minutes', () => {
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      Integration: Match.objectLike({ ResponseTransferMode: 'STREAM', TimeoutInMillis: 900_000 }),
    });
    const { logicalId } = functionOf('PublishedExecute');
    expect(template.findResources('AWS::Lambda::Function')[logicalId]!.Properties.Timeout).toBe(900);
  });

  const streamedMethodOf = (routeId: string) => {
    const { logicalId } = functionOf(routeId);
    const methods = Object.values(template.findResources('AWS::ApiGateway::Method'));
    const method = methods.find((candidate) => JSON.stringify(candidate.Properties.Integration?.Uri ?? '').includes(`"${logicalId}"`));
    expect(JSON.stringify(method?.Properties.Integration.Uri), routeId).toContain('/response-streaming-invocations');
    return {
      integration: method?.Properties.Integration as { ResponseTransferMode?: string; TimeoutInMillis?: number },
      functionTimeout: template.findResources('AWS::Lambda::Function')[logicalId]!.Properties.Timeout as number,
    };
  };

  it('streams the three SSE routes for up to 15 minutes too, each function with a 15-minute timeout', () => {
    const longRoutes = ['PublishedExecute', 'PublishedStreamWorkflow', 'PublishedStreamExecution', 'PublishedExecutionEvents'];
    const streamingRoutes = [...longRoutes, 'PublishedStreamProbe'];
    expect(
      routes
        .filter((route) => route.streaming)
        .map((route) => route.id)
        .sort(),
    ).toEqual([...streamingRoutes].sort());
    for (const routeId of longRoutes) {
      const { integration, functionTimeout } = streamedMethodOf(routeId);
      expect(integration, routeId).toMatchObject({ ResponseTransferMode: 'STREAM', TimeoutInMillis: 900_000 });
      expect(functionTimeout, routeId).toBe(900);
    }
    // Every other route answers within API Gateway's default 29 s, buffered.
    const methods = Object.values(template.findResources('AWS::ApiGateway::Method'));
    const buffered = methods.filter((method) => method.Properties.Integration?.ResponseTransferMode === 'STREAM');
    expect(buffered).toHaveLength(streamingRoutes.length);
  });

  it('streams the stream probe within its own bound: the longest hold plus a margin, for function and integration alike', () => {
    const { integration, functionTimeout } = streamedMethodOf('PublishedStreamProbe');

    expect(STREAM_PROBE_TIMEOUT_SECONDS).toBe((STREAM_PROBE_MAX_HOLD_MS + STREAM_PROBE_MARGIN_MS) / 1000);
    expect(STREAM_PROBE_TIMEOUT_SECONDS).toBeLessThan(60);
    expect(functionTimeout).toBe(STREAM_PROBE_TIMEOUT_SECONDS);
    expect(integration).toMatchObject({ ResponseTransferMode: 'STREAM', TimeoutInMillis: STREAM_PROBE_TIMEOUT_SECONDS * 1000 });
  });

  it('lets the tailing functions use the stream events table (logs, open streams) and nothing else but authentication and usage', () => {
    for (const routeId of ['PublishedStreamExecution', 'PublishedExecutionEvents']) {
      const route = routes.find((candidate) => candidate.id === routeId)!;
      // readWrite: the slots of their open streams live beside the logs (functions/published/open-streams-repository.ts).
      expect(route.tables, routeId).toEqual({ apiKeys: 'read', counters: 'readWrite', streamEvents: 'readWrite', usage: 'write' });
      const policy = policyOf(routeId);
      expect(policy, routeId).not.toMatch(/s3:|states:|bedrock:/);
      const variables = template.findResources('AWS::Lambda::Function')[functionOf(routeId).logicalId]!.Properties.Environment.Variables;
      expect(
        Object.keys(variables)
          .filter((name) => name.endsWith('_TABLE'))
          .sort(),
        routeId,
      ).toEqual(['API_KEYS_TABLE', 'COUNTERS_TABLE', 'STREAM_EVENTS_TABLE', 'USAGE_TABLE']);
      expect(variables, routeId).not.toHaveProperty('BODIES_BUCKET');
    }
  });

  it('keeps the signing secret and Bedrock away from API functions, and gives the step function Bedrock streaming only', () => {
    expect(policyOf('WorkflowStep')).toContain('bedrock:InvokeModelWithResponseStream');
    for (const route of routes) expect(policyOf(functionIdOf(route))).not.toContain('bedrock:');
    const variables =
      template.findResources('AWS::Lambda::Function')[functionOf('PublishedGetExecution').logicalId]!.Properties.Environment.Variables;
    expect(Object.keys(variables)).toEqual(expect.arrayContaining(['API_KEYS_TABLE', 'COUNTERS_TABLE', 'EXECUTIONS_TABLE']));
    expect(variables).not.toHaveProperty('USER_STATE_TABLE');
    expect(variables).not.toHaveProperty('PUBLICATIONS_TABLE');
  });
});

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing unacknowledged in the stack', () => {
    expect(nagFailure ? String(nagFailure as Error) : undefined).toBeUndefined();
  });

  it('does fail synthesis on a finding nobody acknowledged', () => {
    const app = templateApp();
    const careless = new Stack(app, 'Careless');
    new Bucket(careless, 'Open');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).toThrow();
  });

  it('acknowledges on the constructs concerned, never on the stack or the app', () => {
    const acknowledgedOn = (scope: { node: { metadata: { type: string }[] } }) =>
      scope.node.metadata.filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY);
    expect(acknowledgedOn(stack)).toEqual([]);
    expect(acknowledgedOn(stack.node.root)).toEqual([]);
    const places = stack.node.findAll().filter((construct) => acknowledgedOn(construct).length > 0);
    expect(places.length).toBeGreaterThan(routes.length + taskFunctions.length);
  });

  it('accepts Resource::* only where active tracing, log delivery and Marketplace subscriptions need it, with no other action', () => {
    const starScopes = stack.node
      .findAll()
      .filter((construct) =>
        construct.node.metadata.some(
          (entry) =>
            entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY &&
            Object.keys(entry.data as object).some((id) => id.endsWith('[Resource::*]')),
        ),
      )
      .map((construct) => construct.node.path.replace(/^Test\//, ''));
    const roles = [
      ...[stack.api.functions, stack.engine.functions, stack.collection.functions].flatMap((functions) =>
        Object.values(functions).map((fn) => fn.role!),
      ),
      stack.engine.stateMachine.role,
      stack.collection.stateMachine.role,
    ];
    // On each role's grants policy (DefaultPolicy), not on the role, the function or anything wider.
    expect(starScopes.sort()).toEqual(roles.map((role) => `${role.node.path.replace(/^Test\//, '')}/DefaultPolicy`).sort());

    const stateMachineRoles = [stack.engine, stack.collection].map((owner) =>
      stack.getLogicalId(owner.stateMachine.role.node.defaultChild as never),
    );
    const stepRole = stack.getLogicalId(stack.engine.functions.WorkflowStep!.role!.node.defaultChild as never);
    const hasRole = (policy: { [key: string]: any }, logicalId: string) =>
      (policy.Properties.Roles as { Ref: string }[]).some((role) => role.Ref === logicalId);
    for (const [id, policy] of Object.entries(template.findResources('AWS::IAM::Policy'))) {
      // The step function's first call to a third-party model subscribes the account (Subscribe held to its products).
      const allowed = stateMachineRoles.some((role) => hasRole(policy, role))
        ? /^(xray|logs):/
        : hasRole(policy, stepRole)
          ? /^(xray:|aws-marketplace:(Subscribe|ViewSubscriptions|Unsubscribe)$)/
          : /^xray:/;
      for (const statement of policy.Properties.PolicyDocument.Statement as {
        Action: string | string[];
        Resource: unknown;
        Condition?: unknown;
      }[]) {
        if (statement.Resource !== '*') continue;
        for (const action of [statement.Action].flat()) expect(action, id).toMatch(allowed);
        if ([statement.Action].flat().includes('aws-marketplace:Subscribe'))
          expect(statement.Condition, id).toHaveProperty(['StringEquals', 'aws-marketplace:ProductId']);
      }
    }
  });
});

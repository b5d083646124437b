import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { routes } from '../../functions/routes.ts';
import { taskFunctions } from '../../functions/task-functions.ts';
import { TABLE_ENV } from '../../functions/shared/resources.ts';
import { APPROVAL_TIMEOUT_SECONDS } from '../../functions/shared/limits.ts';
import { PlatformStack } from '../../lib/stack.ts';

/** Skips Lambda bundling: these tests look at the template, not the code assets. */
const templateApp = () => new App({ context: { 'aws:cdk:bundling-stacks': [] } });

let stack: PlatformStack;
let template: Template;

beforeAll(() => {
  stack = new PlatformStack(templateApp(), 'Test');
  template = Template.fromStack(stack);
});

function functionOf(routeId: string) {
  const fn = stack.api.functions[routeId]!;
  return { logicalId: stack.getLogicalId(fn.node.defaultChild as never), fn };
}

function policyOf(routeId: string): string {
  const fn = stack.api.functions[routeId] ?? stack.engine.functions[routeId]!;
  const roleId = stack.getLogicalId(fn.role!.node.defaultChild as never);
  const policies = template.findResources('AWS::IAM::Policy', {
    Properties: { Roles: [{ Ref: roleId }] },
  });
  return JSON.stringify(Object.values(policies));
}

describe('data', () => {
  it('creates on-demand tables with TTL, point-in-time recovery and encryption, kept on stack deletion', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', Object.keys(TABLE_ENV).length);
    const tables = template.findResources('AWS::DynamoDB::Table');
    for (const table of Object.values(tables)) {
      expect(table.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
        SSESpecification: { SSEEnabled: true },
      });
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.Properties.ProvisionedThroughput).toBeUndefined();
    }
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
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      VersioningConfiguration: { Status: 'Enabled' },
      LifecycleConfiguration: { Rules: [Match.objectLike({ Prefix: 'inbound/', ExpirationInDays: 37 })] },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });
});

describe('api', () => {
  it('is a REGIONAL REST API with a prod stage, throttling and access logs', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'prod',
      TracingEnabled: true,
      AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }),
      MethodSettings: [Match.objectLike({ ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 })],
    });
  });

  it('has one method and one function per route of the route table', () => {
    template.resourceCountIs('AWS::ApiGateway::Method', routes.length);
    template.resourceCountIs('AWS::Lambda::Function', routes.length + taskFunctions.length);
    for (const route of routes) {
      template.hasResourceProperties('AWS::ApiGateway::Method', {
        HttpMethod: route.method,
        Integration: Match.objectLike({
          Type: 'AWS_PROXY',
          Uri: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([Match.objectLike({ 'Fn::GetAtt': [functionOf(route.id).logicalId, 'Arn'] })])]) }),
        }),
      });
    }
    template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: '{token}' });
  });

  it('answers unknown routes with 404 and throttled requests with Retry-After', () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', { ResponseType: 'MISSING_AUTHENTICATION_TOKEN', StatusCode: '404' });
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'THROTTLED',
      ResponseParameters: { 'gatewayresponse.header.Retry-After': "'1'" },
    });
  });

  it('runs functions on the newest Node runtime on arm64 with tracing', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    for (const fn of Object.values(functions)) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'], TracingConfig: { Mode: 'Active' } });
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

  it('lets the event function write bodies under inbound/ only, with object-level actions', () => {
    const policy = policyOf('WebhookPostEvent');
    expect(policy).toContain('s3:PutObject');
    expect(policy).toContain('/inbound/*');
    expect(policy).not.toMatch(/s3:\*|s3:List|s3:PutBucket/);
  });
});

describe('workflow engine', () => {
  const definition = () => {
    const machines = template.findResources('AWS::StepFunctions::StateMachine');
    expect(Object.keys(machines)).toHaveLength(1);
    return Object.values(machines)[0]!.Properties;
  };

  it('is one Standard state machine from the ASL file, with every task function substituted', () => {
    const properties = definition();
    expect(properties.StateMachineType).toBe('STANDARD');
    expect(properties.TracingConfiguration).toEqual({ Enabled: true });
    const substitutions = properties.DefinitionSubstitutions;
    for (const task of taskFunctions) {
      const logicalId = stack.getLogicalId(stack.engine.functions[task.id]!.node.defaultChild as never);
      expect(substitutions[task.arnSubstitution]).toEqual({ 'Fn::GetAtt': [logicalId, 'Arn'] });
    }
    const asl = JSON.parse(readFileSync(new URL('../../statemachines/workflow.asl.json', import.meta.url), 'utf8'));
    expect(JSON.stringify(properties.DefinitionString)).toContain('waitForTaskToken');
    expect(asl.States.AwaitApproval.Resource).toBe('arn:aws:states:::lambda:invoke.waitForTaskToken');
    expect(asl.States.AwaitApproval.TimeoutSeconds).toBe(APPROVAL_TIMEOUT_SECONDS);
    expect(asl.States.Pause.Type).toBe('Wait');
    expect(asl.States.RunStep.Catch[0].Next).toBe('RecordFailure');
  });

  it('lets the state machine invoke exactly its task functions', () => {
    const roleId = Object.entries(template.findResources('AWS::IAM::Role')).find(([id]) => id.includes('WorkflowStateMachineRole'))![0];
    const policy = JSON.stringify(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
    for (const task of taskFunctions) expect(policy).toContain(stack.getLogicalId(stack.engine.functions[task.id]!.node.defaultChild as never));
    expect(policy).toContain('lambda:InvokeFunction');
    expect(policy).not.toContain('PublishedExecute');
  });

  it('grants StartExecution, StopExecution and task responses only to the routes that need them', () => {
    const grants: Record<string, string[]> = {
      PublishedExecute: ['states:StartExecution'],
      PublishedStopExecution: ['states:StopExecution', 'states:StartExecution'],
      PublishedApprove: ['states:SendTaskSuccess', 'states:SendTaskFailure'],
      PublishedReject: ['states:SendTaskSuccess', 'states:SendTaskFailure'],
    };
    for (const route of routes) {
      const policy = policyOf(route.id);
      const expected = grants[route.id] ?? [];
      for (const action of expected) expect(policy, route.id).toContain(action);
      for (const action of ['states:StartExecution', 'states:StopExecution', 'states:SendTaskSuccess']) {
        if (!expected.includes(action)) expect(policy, `${route.id} must not have ${action}`).not.toContain(action);
      }
      const variables = template.findResources('AWS::Lambda::Function')[functionOf(route.id).logicalId]!.Properties.Environment.Variables;
      expect(Boolean(variables.STATE_MACHINE_ARN), route.id).toBe(expected.length > 0);
    }
  });

  it('streams the blocking execute response for up to 15 minutes', () => {
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      Integration: Match.objectLike({ ResponseTransferMode: 'STREAM', TimeoutInMillis: 900_000 }),
    });
    const { logicalId } = functionOf('PublishedExecute');
    expect(template.findResources('AWS::Lambda::Function')[logicalId]!.Properties.Timeout).toBe(900);
  });

  it('keeps the signing secret and Bedrock away from API functions, and gives the step function Bedrock streaming only', () => {
    expect(policyOf('WorkflowStep')).toContain('bedrock:InvokeModelWithResponseStream');
    for (const route of routes) expect(policyOf(route.id)).not.toContain('bedrock:');
    const variables = template.findResources('AWS::Lambda::Function')[functionOf('PublishedGetExecution').logicalId]!.Properties.Environment.Variables;
    expect(Object.keys(variables)).toEqual(expect.arrayContaining(['API_KEYS_TABLE', 'COUNTERS_TABLE', 'EXECUTIONS_TABLE']));
    expect(variables).not.toHaveProperty('CONVERSATIONS_TABLE');
    expect(variables).not.toHaveProperty('PUBLICATIONS_TABLE');
  });
});

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing unacknowledged in the stack', () => {
    const app = templateApp();
    new PlatformStack(app, 'Nagged');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
  });

  it('does fail synthesis on a finding nobody acknowledged', () => {
    const app = templateApp();
    const careless = new Stack(app, 'Careless');
    new Bucket(careless, 'Open');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).toThrow();
  });
});

describe('offline synthesis', () => {
  it('bundles every function with the local esbuild, without Docker', async () => {
    process.env.CDK_DOCKER = '/bin/false';
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'synth-')) });
    new PlatformStack(app, 'Bundled');
    const assembly = app.synth();

    const assets = readdirSync(assembly.directory).filter((entry) => entry.startsWith('asset.'));
    const bundles = assets.filter((asset) => existsSync(join(assembly.directory, asset, 'index.mjs')));
    expect(bundles).toHaveLength(routes.length + taskFunctions.length);
  }, 60_000);
});

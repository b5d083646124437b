import { readFileSync } from 'node:fs';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { CALLBACK_ABANDONED_ERROR, ENDED_STATUSES } from '#engine/execution-reconciler.ts';
import { routes, routeTimeoutSeconds } from '#functions/routes.ts';
import { STOP_ARRIVAL_WAIT_SECONDS } from '#shared/limits.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { TRANSIENT_SERVICE_ERROR } from '#shared/store/transient-errors.ts';
import { Data } from '#lib/cdk/constructs/data.ts';
import { WorkflowEngine } from '#lib/cdk/constructs/workflow-engine.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';
import { COLLECTION_TIME_ZONE } from '#shared/collection-night.ts';

/** Skips Lambda bundling: these tests look at the template, not the code assets. */
const templateApp = () => new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } });

type Asl = {
  States: Record<
    string,
    { Type: string; Resource?: string; Retry?: Retrier[]; Catch?: { ErrorEquals: string[]; Next: string }[]; Error?: string }
  >;
};
const aslText = (machine: string) => readFileSync(new URL(`../../statemachines/${machine}.asl.json`, import.meta.url), 'utf8');
const ASL = JSON.parse(aslText('workflow')) as Asl;
const COLLECTION_ASL = JSON.parse(aslText('collection')) as Asl;
interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: string;
}
const LAMBDA_SERVICE_ERRORS = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.TooManyRequestsException',
];
/** Every Task state of both state machines, named `<machine>.<state>`. */
const taskStates = Object.entries({ workflow: ASL, collection: COLLECTION_ASL }).flatMap(([machine, asl]) =>
  Object.entries(asl.States)
    .filter(([, state]) => state.Type === 'Task')
    .map(([name, state]) => [`${machine}.${name}`, state] as const),
);

let stack: PlatformStack;
let template: Template;
const logicalIdOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const reconciler = () => stack.engine.functions.WorkflowExecutionEnded!;

beforeAll(() => {
  stack = new PlatformStack(templateApp(), 'Test', { env: { region: 'us-east-1' } });
  template = Template.fromStack(stack);
});

function stateMachineProperties(machine: 'engine' | 'collection' = 'engine') {
  return template.findResources('AWS::StepFunctions::StateMachine')[logicalIdOf(stack[machine].stateMachine)]!.Properties;
}

describe('retries in the state machines', () => {
  it('retries Lambda service errors, throttling included, 6 to 8 times with full jitter and a capped delay in every task', () => {
    expect(taskStates.map(([name]) => name)).toEqual([
      'workflow.RunStep',
      'workflow.AwaitApproval',
      'workflow.RecordFailure',
      'workflow.DeliverCallback',
      'workflow.GiveUpCallback',
      'collection.CollectBatch',
    ]);
    for (const [name, state] of taskStates) {
      const retrier = state.Retry?.find((candidate) => candidate.ErrorEquals.includes('Lambda.TooManyRequestsException'));
      expect(retrier, name).toBeDefined();
      expect(retrier!.ErrorEquals, name).toEqual(LAMBDA_SERVICE_ERRORS);
      expect(retrier!.MaxAttempts, name).toBeGreaterThanOrEqual(6);
      expect(retrier!.MaxAttempts, name).toBeLessThanOrEqual(8);
      expect(retrier!.JitterStrategy, name).toBe('FULL');
      expect(retrier!.MaxDelaySeconds, name).toBeGreaterThan(0);
    }
  });

  it('retries the one named transient error with backoff and full jitter in every task, before any catch-all', () => {
    for (const [name, state] of taskStates) {
      const retriers = state.Retry ?? [];
      const index = retriers.findIndex((candidate) => candidate.ErrorEquals.includes(TRANSIENT_SERVICE_ERROR));
      expect(index, name).toBeGreaterThanOrEqual(0);
      expect(retriers[index], name).toMatchObject({
        ErrorEquals: [TRANSIENT_SERVICE_ERROR],
        BackoffRate: 2,
        JitterStrategy: 'FULL',
        MaxAttempts: 6,
      });
      expect(retriers[index]!.MaxDelaySeconds, name).toBeGreaterThan(0);
      const catchAll = retriers.findIndex((candidate) => candidate.ErrorEquals.includes('States.ALL'));
      if (catchAll >= 0) expect(catchAll, `${name}: States.ALL must come last`).toBe(retriers.length - 1);
    }
    // Only what the retries could not fix reaches RecordFailure.
    expect(ASL.States.RunStep!.Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: 'RecordFailure' }]);
  });

  it('invokes a task whose function crashed (its answer lost, maybe after its writes) again, a few times, before any catch-all', () => {
    for (const [name, state] of taskStates) {
      const retriers = state.Retry ?? [];
      const index = retriers.findIndex((candidate) => candidate.ErrorEquals.includes('Runtime.ExitError'));
      expect(retriers[index], name).toMatchObject({
        ErrorEquals: ['Runtime.ExitError', 'Lambda.Unknown'],
        MaxAttempts: 3,
        JitterStrategy: 'FULL',
      });
      const catchAll = retriers.findIndex((candidate) => candidate.ErrorEquals.includes('States.ALL'));
      if (catchAll >= 0) expect(index, name).toBeLessThan(catchAll);
    }
  });

  it('ends a callback whose give-up cannot be written in a named failure the reconciler recognises', () => {
    expect(ASL.States.GiveUpCallback!.Catch![0]!.Next).toBe('CallbackNotRecorded');
    expect(ASL.States.CallbackNotRecorded).toMatchObject({ Type: 'Fail', Error: CALLBACK_ABANDONED_ERROR });
  });

  // StopExecution stops an execution (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StopExecution.html):
  // one that has already ended SUCCEEDED stays so, so the execution must still be running, in a Wait, when it arrives.
  it("ends an execution its step found stopped in AwaitStop, which outwaits the stop's invocation and its StopExecution", () => {
    const route = ASL.States.Route as unknown as { Choices: Record<string, unknown>[] };
    expect(route.Choices).toContainEqual({ Variable: '$.outcome', StringEquals: 'stopped', Next: 'AwaitStop' });
    expect(ASL.States.AwaitStop).toMatchObject({ Type: 'Wait', Seconds: STOP_ARRIVAL_WAIT_SECONDS, Next: 'Done' });
    const stop = routes.find((candidate) => candidate.id === 'PublishedStopExecution')!;
    expect(STOP_ARRIVAL_WAIT_SECONDS).toBeGreaterThan(routeTimeoutSeconds(stop));
  });

  it('deploys exactly the ASL files, each on its own state machine', () => {
    expect(stateMachineProperties('engine').DefinitionString).toBe(aslText('workflow'));
    expect(stateMachineProperties('collection').DefinitionString).toBe(aslText('collection'));
  });
});

describe('partition', () => {
  it('names no partition in the ASL files: resources use the Partition substitution, which is the stack partition', () => {
    for (const machine of ['workflow', 'collection']) expect(aslText(machine), machine).not.toContain('arn:aws:');
    for (const [name, state] of taskStates) expect(state.Resource, name).toMatch(/^arn:\$\{Partition\}:states:::lambda:invoke/);
    for (const machine of ['engine', 'collection'] as const)
      expect(stateMachineProperties(machine).DefinitionSubstitutions.Partition).toEqual({ Ref: 'AWS::Partition' });
  });
});

describe('execution-ended reconciler', () => {
  it('is triggered by EventBridge for the workflow state machine’s FAILED, TIMED_OUT and ABORTED executions', () => {
    const stateMachineId = logicalIdOf(stack.engine.stateMachine);
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.states'],
        'detail-type': ['Step Functions Execution Status Change'],
        detail: { stateMachineArn: [{ Ref: stateMachineId }], status: ['FAILED', 'TIMED_OUT', 'ABORTED'] },
      },
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalIdOf(reconciler()), 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86_400 },
        }),
      ],
    });
    expect([...ENDED_STATUSES]).toEqual(['FAILED', 'TIMED_OUT', 'ABORTED']);
    // The one rule on Step Functions events: the collection's executions never reach the reconciler.
    const statusRules = Object.values(template.findResources('AWS::Events::Rule')).filter((rule) =>
      JSON.stringify(rule.Properties.EventPattern).includes('aws.states'),
    );
    expect(statusRules).toHaveLength(1);
    expect(JSON.stringify(statusRules)).not.toContain(logicalIdOf(stack.collection.stateMachine));
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [logicalIdOf(reconciler()), 'Arn'] },
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalIdOf(reconciler()) },
      MaximumRetryAttempts: 2,
      MaximumEventAgeInSeconds: 21_600,
    });
  });

  it('may read and write executions and their logs, read large values, and start executions of the workflow state machine, nothing else', () => {
    const roleId = stack.getLogicalId(reconciler().role!.node.defaultChild as never);
    const policy = JSON.stringify(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
    expect(policy).toContain('states:StartExecution');
    expect(policy).toContain(logicalIdOf(stack.engine.stateMachine));
    expect(policy).not.toContain(logicalIdOf(stack.collection.stateMachine));
    expect(policy).toContain(logicalIdOf(stack.data.tables.executions));
    expect(policy).toContain('dynamodb:UpdateItem');
    expect(policy).toContain(logicalIdOf(stack.data.tables.streamEvents));
    for (const other of ['userState', 'publications', 'apiKeys', 'counters', 'links', 'inboundEvents'] as const) {
      expect(policy, other).not.toContain(logicalIdOf(stack.data.tables[other]));
    }
    expect(policy).toContain('s3:GetObject');
    expect(policy).not.toMatch(/states:StopExecution|states:SendTask|s3:PutObject|s3:DeleteObject|bedrock:/);
    const variables = template.findResources('AWS::Lambda::Function')[logicalIdOf(reconciler())]!.Properties.Environment.Variables;
    expect(variables).toHaveProperty('STATE_MACHINE_ARN', { Ref: logicalIdOf(stack.engine.stateMachine) });
    expect(variables).not.toHaveProperty('COLLECTION_STATE_MACHINE_ARN');
  });

  it('is not a task of the state machine: no substitution, and the state machine cannot invoke it', () => {
    for (const task of taskFunctions) {
      const owner = task.machine === 'workflow' ? 'engine' : 'collection';
      if (task.trigger) expect(task.arnSubstitution).toBeUndefined();
      else
        expect(stateMachineProperties(owner).DefinitionSubstitutions[task.arnSubstitution!]).toEqual({
          'Fn::GetAtt': [logicalIdOf(stack[owner].functions[task.id]!), 'Arn'],
        });
    }
    const roleId = Object.keys(template.findResources('AWS::IAM::Role')).find((id) => id.includes('WorkflowStateMachineRole'))!;
    const policy = JSON.stringify(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
    expect(policy).toContain(logicalIdOf(stack.engine.functions.WorkflowStep!));
    expect(policy).not.toContain(logicalIdOf(reconciler()));
  });
});

describe('deploy order', () => {
  it('updates every function that starts runs after the step function, and only those', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    const step = logicalIdOf(stack.engine.functions.WorkflowStep!);
    const startsRuns = [...routes, ...taskFunctions]
      .filter((declared) => declared.stateMachines?.workflow?.includes('start'))
      .map((declared) => declared.id);
    expect(startsRuns).toContain('PublishedExecute');
    // Starting a collection sweep is not starting a workflow run.
    expect(startsRuns).not.toContain('CollectionNightly');
    for (const [id, fn] of [
      ...Object.entries(stack.api.functions),
      ...Object.entries(stack.engine.functions),
      ...Object.entries(stack.collection.functions),
    ]) {
      const dependsOn = functions[logicalIdOf(fn)]!.DependsOn ?? [];
      expect(dependsOn.includes(step), id).toBe(startsRuns.includes(id));
    }
  });
});

describe('step function reserved concurrency', () => {
  const engineTemplate = (stepReservedConcurrency?: number) => {
    const engineStack = new Stack(templateApp(), 'Engine', { env: { region: 'us-east-1' } });
    const engine = new WorkflowEngine(engineStack, 'Engine', { data: new Data(engineStack, 'Data'), stepReservedConcurrency });
    const step = engineStack.getLogicalId(engine.functions.WorkflowStep!.node.defaultChild as never);
    return { functions: Template.fromStack(engineStack).findResources('AWS::Lambda::Function'), step };
  };

  it('is set on the step function only when the prop is given', () => {
    const reserved = engineTemplate(25);
    expect(reserved.functions[reserved.step]!.Properties.ReservedConcurrentExecutions).toBe(25);
    const others = Object.entries(reserved.functions).filter(([id]) => id !== reserved.step);
    for (const [id, fn] of others) expect(fn.Properties.ReservedConcurrentExecutions, id).toBeUndefined();
    const shared = engineTemplate();
    expect(shared.functions[shared.step]!.Properties.ReservedConcurrentExecutions).toBeUndefined();
  });

  it('refuses a reservation that is not a whole number of at least 1', () => {
    expect(() => engineTemplate(0)).toThrow(/stepReservedConcurrency/);
    expect(() => engineTemplate(2.5)).toThrow(/stepReservedConcurrency/);
  });

  it('reaches the deployed stack from the CDK context (cdk deploy -c stepReservedConcurrency=40)', () => {
    const app = new App({
      builtinCloudFormationValidation: false,
      context: { 'aws:cdk:bundling-stacks': [], stepReservedConcurrency: '40' },
    });
    const platform = new PlatformStack(app, 'FromContext', { env: { region: 'us-east-1' } });
    const step = platform.getLogicalId(platform.engine.functions.WorkflowStep!.node.defaultChild as never);
    expect(Template.fromStack(platform).findResources('AWS::Lambda::Function')[step]!.Properties.ReservedConcurrentExecutions).toBe(40);
    const refused = new App({ context: { 'aws:cdk:bundling-stacks': [], stepReservedConcurrency: 'many' } });
    expect(() => new PlatformStack(refused, 'Refused', { env: { region: 'us-east-1' } })).toThrow(
      /stepReservedConcurrency must be a number/,
    );
  });
});

describe('nightly collection', () => {
  const functionOf = (id: string) => stack.collection.functions[id]!;
  const logicalIdOfFn = (id: string) => stack.getLogicalId(functionOf(id).node.defaultChild as never);
  const policyOfFn = (id: string) => {
    const roleId = stack.getLogicalId(functionOf(id).role!.node.defaultChild as never);
    return JSON.stringify(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
  };

  it('fires at the start of the night in the collection zone with no flexible window, few retries within an hour, and a dead-letter queue', () => {
    const schedules = Object.values(template.findResources('AWS::Scheduler::Schedule'));
    expect(schedules.map(({ Properties }) => Properties.ScheduleExpression).sort()).toEqual(['cron(0 0 * * ? *)', 'cron(0 4 * * ? *)']);
    const { Properties: schedule } = schedules.find(({ Properties }) => Properties.ScheduleExpression === 'cron(0 0 * * ? *)')!;
    const { Properties: deadline } = schedules.find(({ Properties }) => Properties.ScheduleExpression === 'cron(0 4 * * ? *)')!;
    // The 04:00 check counts the night's unfinished sweeps for the NightlySweepsLate alarm; both are in their own group.
    expect(JSON.parse(deadline.Target.Input as string)).toEqual({ check: 'deadline' });
    expect(deadline.ScheduleExpressionTimezone).toBe(COLLECTION_TIME_ZONE);
    expect(JSON.stringify(deadline.Target.Arn)).toContain(logicalIdOfFn('CollectionNightly'));
    expect(schedule.GroupName).toEqual(deadline.GroupName);
    expect(schedule.GroupName).toBeDefined();
    expect(schedule.ScheduleExpressionTimezone).toBe(COLLECTION_TIME_ZONE);
    expect(schedule.FlexibleTimeWindow).toEqual({ Mode: 'OFF' });
    expect(schedule.Target.RetryPolicy).toEqual({ MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 2 });
    expect(JSON.stringify(schedule.Target.Arn)).toContain(logicalIdOfFn('CollectionNightly'));
    const queueId = stack.getLogicalId(stack.collection.nightly!.deadLetters.node.defaultChild as never);
    expect(JSON.stringify(schedule.Target.DeadLetterConfig)).toContain(queueId);
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
  });

  it('gives the nightly trigger the task list and StartExecution only, and the collector 15 minutes and exactly its grants', () => {
    const nightly = policyOfFn('CollectionNightly');
    expect(nightly).toContain('states:StartExecution');
    expect(nightly).toContain(logicalIdOf(stack.collection.stateMachine));
    expect(nightly).not.toContain(logicalIdOf(stack.engine.stateMachine));
    expect(nightly).not.toMatch(/s3:|events:PutEvents|states:StopExecution/);
    // Its only writes are its own usage items.
    const writes = JSON.parse(nightly) as Record<
      string,
      { Properties: { PolicyDocument: { Statement: { Action: string[] | string; Resource: unknown }[] } } }
    >;
    const writeStatements = Object.values(writes)
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
      .filter((statement) => [statement.Action].flat().includes('dynamodb:PutItem'));
    expect(JSON.stringify(writeStatements.map((statement) => statement.Resource))).toContain(
      stack.getLogicalId(stack.data.tables.usage.node.defaultChild as never),
    );
    expect(JSON.stringify(writeStatements.map((statement) => statement.Resource))).not.toContain(
      stack.getLogicalId(stack.data.tables.collection.node.defaultChild as never),
    );
    const functions = template.findResources('AWS::Lambda::Function');
    expect(functions[logicalIdOfFn('CollectBatch')]!.Properties.Timeout).toBe(900);
    const collector = policyOfFn('CollectBatch');
    expect(collector).toContain('events:PutEvents');
    // The bus keeps the logical id it was deployed with (test/infra/state-machines.test.ts), which getLogicalId does not report.
    expect(collector).toContain(stack.resolve((stack.collection.handoffBus.node.defaultChild as CfnElement).logicalId) as string);
    for (const prefix of ['/inbound/*', '/recordings/*', '/handoff/*']) expect(collector).toContain(prefix);
    expect(collector).not.toMatch(/s3:DeleteObject|states:|bedrock:/);
    expect(functions[logicalIdOfFn('CollectBatch')]!.Properties.Environment.Variables).toHaveProperty('HANDOFF_BUS_NAME');
    expect(JSON.stringify(functions[logicalIdOfFn('CollectBatch')]!.Properties.Environment.Variables)).not.toContain('ALLOW_LOOPBACK');
  });

  it('sets no test-only loopback allowance on any function', () => {
    const environments = JSON.stringify(
      Object.values(template.findResources('AWS::Lambda::Function')).map((fn) => fn.Properties.Environment),
    );
    expect(environments).not.toMatch(/ALLOW_LOOPBACK/);
  });

  it('has a hand-off bus of its own', () => {
    template.resourceCountIs('AWS::Events::EventBus', 1);
  });
});

describe('what agents may reach', () => {
  const policyOf = (target: PlatformStack, id: string) => {
    const fn = target.engine.functions[id] ?? target.collection.functions[id]!;
    const roleId = target.getLogicalId(fn.role!.node.defaultChild as never);
    return JSON.stringify(Template.fromStack(target).findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
  };

  it('lets the step function invoke the listed Bedrock models only, a profile with its model in any region', () => {
    const policy = policyOf(stack, 'WorkflowStep');
    expect(policy).toContain('bedrock:InvokeModelWithResponseStream');
    expect(policy).toContain('bedrock:InvokeModel"');
    expect(policy).toContain(':bedrock:us-east-1::foundation-model/amazon.nova-micro-v1:0');
    // Past its end of life, the catalog's image model is in no default list: nothing is granted for it.
    expect(policy).not.toContain('nova-canvas');
    expect(policy).toContain(':inference-profile/us.amazon.nova-lite-v1:0');
    expect(policy).toContain(':bedrock:*::foundation-model/amazon.nova-lite-v1:0');
    expect(policy).not.toMatch(/foundation-model\/\*|inference-profile\/\*/);
    for (const task of taskFunctions.filter((candidate) => candidate.id !== 'WorkflowStep'))
      expect(policyOf(stack, task.id), task.id).not.toContain('bedrock:');
  });

  it('takes the model list from CDK context and refuses an id that is not one', () => {
    const app = templateApp();
    app.node.setContext('bedrockModels', 'amazon.nova-micro-v1:0,us.amazon.nova-pro-v1:0');
    const custom = new PlatformStack(app, 'Custom', { env: { region: 'us-east-1' } });
    const policy = policyOf(custom, 'WorkflowStep');
    expect(policy).toContain('foundation-model/amazon.nova-micro-v1:0');
    expect(policy).toContain('inference-profile/us.amazon.nova-pro-v1:0');
    expect(policy).not.toContain('amazon.nova-lite');
    expect(policy).not.toContain('aws-marketplace:');
    const bad = templateApp();
    bad.node.setContext('bedrockModels', 'amazon.nova-lite-v1:0,../*');
    expect(() => new PlatformStack(bad, 'Bad', { env: { region: 'us-east-1' } })).toThrow(
      /bedrockModels: "\.\.\/\*" is not a Bedrock model id/,
    );
  });

  it('refuses a model outside the catalog, one past its end of life, and a profile-only model named without its profile', () => {
    const stackWith = (models: string) => {
      const app = templateApp();
      app.node.setContext('bedrockModels', models);
      return () => new PlatformStack(app, 'Models', { env: { region: 'us-east-1' } });
    };
    expect(stackWith('amazon.titan-text-express-v1')).toThrow(
      /amazon\.titan-text-express-v1 is not a model the product supports; choose from amazon\.nova-micro-v1:0/,
    );
    expect(stackWith('anthropic.claude-3-5-haiku-20241022-v1:0')).toThrow(/reached end of life on Bedrock on 2026-06-19/);
    expect(stackWith('amazon.nova-lite-v1:0,amazon.nova-canvas-v1:0')).toThrow(
      'CDK context bedrockModels: amazon.nova-canvas-v1:0 reached end of life on Bedrock on 2026-09-30',
    );
    expect(stackWith('anthropic.claude-haiku-4-5-20251001-v1:0')).toThrow(/is not a model the product supports/);
    expect(stackWith('us.anthropic.claude-haiku-4-5-20251001-v1:0')).not.toThrow();
  });

  it("lets the step function subscribe the account to the allowed third-party models' Marketplace products only", () => {
    const statements = template.findResources('AWS::IAM::Policy') as Record<
      string,
      { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }
    >;
    const all = Object.values(statements).flatMap((resource) => resource.Properties.PolicyDocument.Statement);
    const subscribe = all.filter((statement) => JSON.stringify(statement.Action).includes('aws-marketplace:Subscribe'));
    expect(subscribe).toEqual([
      expect.objectContaining({
        Action: 'aws-marketplace:Subscribe',
        Resource: '*',
        Condition: {
          StringEquals: { 'aws-marketplace:ProductId': ['prod-xdkflymybwmvi'], 'aws:CalledViaLast': ['bedrock.amazonaws.com'] },
        },
      }),
    ]);
    // "Your IAM role must have aws-marketplace:Subscribe, aws-marketplace:Unsubscribe, and aws-marketplace:ViewSubscriptions"
    // (Bedrock's model-access page): all three, each only when Bedrock calls on the role's behalf.
    expect(policyOf(stack, 'WorkflowStep')).toContain('aws-marketplace:ViewSubscriptions');
    expect(policyOf(stack, 'WorkflowStep')).toContain('aws-marketplace:Unsubscribe');
    for (const task of taskFunctions.filter((candidate) => candidate.id !== 'WorkflowStep'))
      expect(policyOf(stack, task.id), task.id).not.toContain('aws-marketplace');
  });

  it('lets only the step function read secrets, under the stack prefix, and tells it and the operator where', () => {
    const policy = policyOf(stack, 'WorkflowStep');
    expect(policy).toContain('ssm:GetParameters');
    expect(policy).toContain(':parameter/Test/secrets/*');
    expect(policy).not.toContain('ssm:PutParameter');
    for (const task of taskFunctions.filter((candidate) => candidate.id !== 'WorkflowStep'))
      expect(policyOf(stack, task.id), task.id).not.toContain('ssm:');
    const variables =
      template.findResources('AWS::Lambda::Function')[logicalIdOf(stack.engine.functions.WorkflowStep!)]!.Properties.Environment.Variables;
    expect(variables).toHaveProperty('SECRETS_PARAMETER_PREFIX', '/Test/secrets');
    expect(variables).not.toHaveProperty('ALLOW_LOOPBACK_TOOLS');
    template.hasOutput('SecretsParameterPrefix', { Value: '/Test/secrets' });
  });
});

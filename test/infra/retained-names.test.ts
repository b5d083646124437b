import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { PlatformStack } from '#lib/cdk/stack.ts';

/**
 * What `cdk destroy` leaves behind must not stand in the way of the next deploy under the same stack name. A resource
 * kept on stack deletion (or on replacement) still holds its name; CloudFormation creates a named resource under the
 * name the template gives, and the resource's handler fails the create with `AlreadyExists` ("The specified resource
 * already existed before the execution of this handler",
 * https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-test-contract-errors.html): the
 * deploy fails with "... already exists" and rolls back. Without a name property CloudFormation generates a unique one
 * ("If you don't specify a name, CloudFormation generates a unique physical ID to name the resource",
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-name.html).
 *
 * So each retained resource's name is rendered for two deployments of the same stack name in the same account and
 * region, which differ only in what CloudFormation makes new per deployment: the stack id's UUID and the names it
 * generates. A name that comes out the same both times is fixed, and fails the test.
 */

const STACK_NAME = 'WorkflowIngestPlatform';
const REGION = 'us-east-1';
const ACCOUNT = '123456789012';

/** The property holding each type's own name; null where the type has none. A retained type missing here fails. */
const NAME_PROPERTY: Readonly<Record<string, string | null>> = {
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::S3::Bucket': 'BucketName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::Scheduler::ScheduleGroup': 'Name',
  'AWS::IAM::Role': 'RoleName',
  'AWS::Lambda::Function': 'FunctionName',
  // A key has no name (an alias is a resource of its own, deleted with the stack).
  'AWS::KMS::Key': null,
  // The region's API Gateway settings (the CloudWatch role): no name; a new stack sets them again.
  'AWS::ApiGateway::Account': null,
};

const RETAINING = new Set(['Retain', 'RetainExceptOnCreate']);

interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
}
type Resources = Readonly<Record<string, CfnResource>>;

/** One deployment: what CloudFormation makes unique to it. */
interface Deployment {
  readonly uuid: string;
}

const PSEUDO: Readonly<Record<string, (deployment: Deployment) => string>> = {
  'AWS::StackName': () => STACK_NAME,
  'AWS::StackId': ({ uuid }) => `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/${STACK_NAME}/${uuid}`,
  'AWS::Region': () => REGION,
  'AWS::AccountId': () => ACCOUNT,
  'AWS::Partition': () => 'aws',
  'AWS::URLSuffix': () => 'amazonaws.com',
};

/** A resource's physical name in a deployment: its name property rendered, else one CloudFormation generates. */
function physicalName(resources: Resources, logicalId: string, deployment: Deployment): string {
  const resource = resources[logicalId];
  if (!resource) throw new Error(`No resource ${logicalId} in the template`);
  if (!(resource.Type in NAME_PROPERTY)) throw new Error(`${logicalId}: add ${resource.Type}'s name property to NAME_PROPERTY`);
  const property = NAME_PROPERTY[resource.Type];
  const name = property ? resource.Properties?.[property] : undefined;
  return name === undefined ? `${STACK_NAME}-${logicalId}-${deployment.uuid}` : render(resources, name, deployment);
}

function render(resources: Resources, value: unknown, deployment: Deployment): string {
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  const [intrinsic, args] = Object.entries(value as Record<string, unknown>)[0] ?? [];
  switch (intrinsic) {
    case 'Ref': {
      const ref = args as string;
      return PSEUDO[ref]?.(deployment) ?? physicalName(resources, ref, deployment);
    }
    case 'Fn::GetAtt': {
      const [logicalId, attribute] = args as [string, string];
      return `${attribute}(${physicalName(resources, logicalId, deployment)})`;
    }
    case 'Fn::Join': {
      const [separator, parts] = args as [string, unknown[]];
      return parts.map((part) => render(resources, part, deployment)).join(separator);
    }
    case 'Fn::Select': {
      const [index, list] = args as [number | string, unknown];
      return renderList(resources, list, deployment)[Number(index)] ?? '';
    }
    default:
      throw new Error(`Cannot render ${JSON.stringify(value)}: teach this test ${intrinsic}`);
  }
}

function renderList(resources: Resources, value: unknown, deployment: Deployment): string[] {
  if (Array.isArray(value)) return value.map((item) => render(resources, item, deployment));
  const split = (value as Record<string, unknown>)['Fn::Split'];
  if (!split) throw new Error(`Cannot render the list ${JSON.stringify(value)}`);
  const [separator, text] = split as [string, unknown];
  return render(resources, text, deployment).split(separator);
}

interface Retained {
  logicalId: string;
  type: string;
  /** The name property as the template writes it, or `generated` where there is none. */
  name: unknown;
  fixed: boolean;
}

/** Every resource kept on stack deletion or on replacement, with its name and whether a later deploy asks for it again. */
function retainedResources(resources: Resources): Retained[] {
  const kept = Object.entries(resources).filter(
    ([, resource]) => RETAINING.has(resource.DeletionPolicy ?? '') || RETAINING.has(resource.UpdateReplacePolicy ?? ''),
  );
  return kept.map(([logicalId, resource]) => {
    const property = NAME_PROPERTY[resource.Type];
    if (property === undefined) throw new Error(`${logicalId}: add ${resource.Type}'s name property to NAME_PROPERTY`);
    const name = property ? resource.Properties?.[property] : undefined;
    const first = physicalName(resources, logicalId, { uuid: '11111111-aaaa-4aaa-8aaa-111111111111' });
    const second = physicalName(resources, logicalId, { uuid: '22222222-bbbb-4bbb-8bbb-222222222222' });
    return { logicalId, type: resource.Type, name: name ?? 'generated', fixed: first === second };
  });
}

function stackResources(context: Record<string, unknown>): Resources {
  const app = new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new PlatformStack(app, STACK_NAME, { env: { region: REGION } });
  return (Template.fromStack(stack).toJSON() as { Resources: Resources }).Resources;
}

describe('what cdk destroy keeps', () => {
  let full: Resources;
  let lean: Resources;
  beforeAll(() => {
    full = stackResources({ alarmEmail: 'oncall@example.com', monthlyBudgetUsd: '200', stepReservedConcurrency: '5' });
    lean = stackResources({ operations: 'lean' });
  });

  it.each([
    ['full', () => full],
    ['lean', () => lean],
  ])('carries no fixed name a deploy under the same stack name asks for again (%s)', (_mode, resources) => {
    const retained = retainedResources(resources());

    expect(retained.filter((resource) => resource.fixed)).toEqual([]);
    // The data and the logs are kept: the check had something to look at.
    expect(new Set(retained.map((resource) => resource.type))).toEqual(
      new Set([
        'AWS::DynamoDB::Table',
        'AWS::S3::Bucket',
        'AWS::Logs::LogGroup',
        'AWS::KMS::Key',
        'AWS::IAM::Role',
        'AWS::ApiGateway::Account',
      ]),
    );
  });

  it('names the state machines’ retained log groups after the stack id, which is new for every stack created', () => {
    const named = retainedResources(full).filter((resource) => resource.name !== 'generated');

    expect(named.map((resource) => resource.type)).toEqual(['AWS::Logs::LogGroup', 'AWS::Logs::LogGroup']);
    for (const resource of named) expect(JSON.stringify(resource.name)).toContain('AWS::StackId');
  });

  it('deletes the nightly schedule group with the stack, under the name existing deployments have (no replacement)', () => {
    const groups = Object.values(full).filter((resource) => resource.Type === 'AWS::Scheduler::ScheduleGroup');

    expect(groups).toHaveLength(1);
    expect(groups[0]).toMatchObject({
      DeletionPolicy: 'Delete',
      UpdateReplacePolicy: 'Delete',
      Properties: { Name: `${STACK_NAME}-Collection-NightlyScheduleGroup-C992D0FE` },
    });
  });
});

describe('the fixed-name check itself', () => {
  const retain = { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' };
  const fixedOf = (resources: Resources) =>
    Object.fromEntries(retainedResources(resources).map((resource) => [resource.logicalId, resource.fixed]));

  it('flags a literal name and a name made of the stack name, region and account only', () => {
    expect(
      fixedOf({
        Group: { Type: 'AWS::Scheduler::ScheduleGroup', ...retain, Properties: { Name: 'Stack-Collection-NightlyScheduleGroup-C992D0FE' } },
        Logs: {
          Type: 'AWS::Logs::LogGroup',
          ...retain,
          Properties: { LogGroupName: { 'Fn::Join': ['', ['/x/', { Ref: 'AWS::StackName' }, '-', { Ref: 'AWS::Region' }]] } },
        },
        // The stack id split at `/`: index 1 is the stack's name, the same for every deployment.
        ByStackName: {
          Type: 'AWS::Logs::LogGroup',
          ...retain,
          Properties: { LogGroupName: { 'Fn::Select': [1, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] } },
        },
        OnReplaceOnly: { Type: 'AWS::DynamoDB::Table', UpdateReplacePolicy: 'Retain', Properties: { TableName: 'links' } },
      }),
    ).toEqual({ Group: true, Logs: true, ByStackName: true, OnReplaceOnly: true });
  });

  it("passes a generated name, the stack id's UUID, and a function's log group where the function's name is generated", () => {
    const lambdaLogs = (fn: string) => ({
      Type: 'AWS::Logs::LogGroup',
      ...retain,
      Properties: { LogGroupName: { 'Fn::Join': ['', ['/aws/lambda/', { Ref: fn }]] } },
    });
    expect(
      fixedOf({
        Table: { Type: 'AWS::DynamoDB::Table', ...retain, Properties: {} },
        Logs: {
          Type: 'AWS::Logs::LogGroup',
          ...retain,
          Properties: { LogGroupName: { 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] } },
        },
        Generated: { Type: 'AWS::Lambda::Function', Properties: {} },
        Named: { Type: 'AWS::Lambda::Function', Properties: { FunctionName: 'ingest' } },
        GeneratedLogs: lambdaLogs('Generated'),
        NamedLogs: lambdaLogs('Named'),
      }),
    ).toEqual({ Table: false, Logs: false, GeneratedLogs: false, NamedLogs: true });
  });

  it('refuses a retained type whose name property it does not know, rather than pass it', () => {
    expect(() => retainedResources({ Queue: { Type: 'AWS::SQS::Queue', ...retain, Properties: { QueueName: 'q' } } })).toThrow(
      /AWS::SQS::Queue's name property/,
    );
  });
});

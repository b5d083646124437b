import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { routeFunctions } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { BUCKET_ENV, OBJECT_ACTIONS, type BucketGrant } from '#shared/resources.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';

/** Each function's S3 grant is exactly its declaration in the route or task table: those prefixes, those actions. */
let stack: PlatformStack;
let template: Template;

beforeAll(() => {
  stack = new PlatformStack(new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } }), 'Test', {
    env: { region: 'us-east-1' },
  });
  template = Template.fromStack(stack);
});

interface Statement {
  Action: string | string[];
  Resource: unknown;
}

/** The S3 statements of a function's role, as `<actions> on <prefix>` lines. */
function s3GrantsOf(id: string): string[] {
  const fn = stack.api.functions[id] ?? stack.engine.functions[id] ?? stack.collection.functions[id]!;
  const roleId = stack.getLogicalId(fn.role!.node.defaultChild as never);
  const policies = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
  const statements = policies.flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
  return statements
    .filter((statement) => [statement.Action].flat().some((action) => action.startsWith('s3:')))
    .map((statement) => {
      const resource = JSON.stringify(statement.Resource);
      const prefix = /\/([a-z]+\/)\*"/.exec(resource)?.[1] ?? resource;
      return `${[statement.Action].flat().sort().join(',')} on ${prefix}`;
    })
    .sort();
}

const declared = (grant: BucketGrant | undefined) =>
  Object.entries(grant ?? {})
    .map(([prefix, access]) => `${[...OBJECT_ACTIONS[access]].sort().join(',')} on ${prefix}`)
    .sort();

function environmentOf(id: string): Record<string, unknown> {
  const fn = stack.api.functions[id] ?? stack.engine.functions[id] ?? stack.collection.functions[id]!;
  return template.findResources('AWS::Lambda::Function')[stack.getLogicalId(fn.node.defaultChild as never)]!.Properties.Environment
    .Variables;
}

describe('bucket grants per function', () => {
  it.each([...routeFunctions(), ...taskFunctions].map((entry) => [entry.id, entry.buckets?.bodies] as const))(
    '%s gets exactly its declared prefixes',
    (id, grant) => {
      expect(s3GrantsOf(id)).toEqual(declared(grant));
      if (grant) expect(environmentOf(id)).toHaveProperty(BUCKET_ENV.bodies);
      else expect(environmentOf(id)).not.toHaveProperty(BUCKET_ENV.bodies);
    },
  );

  it('gives the engine what large run values need, and nothing under inbound/', () => {
    expect(s3GrantsOf('WorkflowStep')).toEqual(['s3:GetObject,s3:PutObject on executions/']);
    expect(s3GrantsOf('WorkflowDeliverCallback')).toEqual(['s3:GetObject on executions/']);
    // A long approval message, read back for the stream's `complete` (interrupted); a long error, to end an execution's log.
    expect(s3GrantsOf('WorkflowAwaitApproval')).toEqual(['s3:GetObject on executions/']);
    expect(s3GrantsOf('WorkflowExecutionEnded')).toEqual(['s3:GetObject on executions/']);
    expect(s3GrantsOf('PublishedStreamExecution')).toEqual([]);
    // The collector reads large webhook bodies and writes recordings and hand-offs; it deletes nothing.
    expect(s3GrantsOf('CollectBatch').sort()).toEqual([
      's3:AbortMultipartUpload,s3:PutObject on recordings/',
      's3:GetObject on inbound/',
      's3:PutObject on handoff/',
    ]);
    expect(s3GrantsOf('CollectionNightly')).toEqual([]);
    expect(s3GrantsOf('PublishedExecutionEvents')).toEqual([]);
    expect(s3GrantsOf('PublishedGetExecution')).toEqual(['s3:GetObject on executions/']);
    expect(s3GrantsOf('PublishedExecute')).toEqual(['s3:GetObject,s3:PutObject on executions/']);
    expect(s3GrantsOf('WebhookPostEvent')).toEqual(['s3:DeleteObject,s3:PutObject on inbound/']);
  });
});

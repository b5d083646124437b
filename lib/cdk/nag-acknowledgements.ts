import { Validations, type CfnElement, type Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { gatewayOf, routeFunctions, routes } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import type { BucketGrant, BucketName, StateMachineGrant, StateMachineName, TableName } from '#shared/resources.ts';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Api } from './constructs/api.ts';
import type { Data } from './constructs/data.ts';
import type { HandlerFunction } from './constructs/handler-function.ts';
import type { WorkflowEngine } from './constructs/workflow-engine.ts';
import type { Collection } from './constructs/collection.ts';
import { TABLE_DEFINITIONS } from './table-definitions.ts';
import { isInferenceProfile } from './bedrock-models.ts';

export interface NaggedParts {
  readonly data: Data;
  readonly engine: WorkflowEngine;
  readonly collection: Collection;
  readonly api: Api;
}

/** What a function declares in the route or task-function table, which is what its grants are made from. */
interface Declared {
  readonly tables: Partial<Record<TableName, unknown>>;
  readonly buckets?: Partial<Record<BucketName, BucketGrant>>;
  readonly stateMachines?: StateMachineGrant;
  readonly invokesBedrock?: boolean;
  readonly readsSecrets?: boolean;
}

/**
 * cdk-nag findings this product accepts on purpose, each with its reason, each acknowledged on the construct it
 * is about (a function role or its grants policy, a state machine, the stage, a method), never on the stack: a new resource with
 * the same finding still fails synthesis. Wildcard findings are acknowledged only where the route or task table
 * declares the grant that produces them.
 */
export function acknowledgeNagFindings(stack: Stack, { data, engine, collection, api }: NaggedParts): void {
  const acknowledge = (scope: IConstruct, id: string, reason: string) => Validations.of(scope).acknowledge({ id, reason });
  const logicalId = (construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnElement);
  const wildcard = (resource: string) => `AwsSolutions::AwsSolutions-IAM5[Resource::${resource}]`;
  // The stack is synthesized for one region, so ARNs name it where cdk-nag would otherwise show `<AWS::Region>`.
  const region = stack.region;
  // The inline policy CDK gives a role for its grants: where every IAM5 (wildcard) finding is.
  const grantsOf = (role: IConstruct) => role.node.findChild('DefaultPolicy');

  acknowledge(
    data.bodiesBucket,
    'AwsSolutions-S1',
    'The bodies bucket is written only by the product functions, whose calls CloudTrail and function logs record; server access logs ' +
      'would double the request bill.',
  );

  if (collection.nightly) {
    acknowledge(
      collection.nightly.deadLetters,
      'AwsSolutions-SQS3',
      'This queue is itself the dead-letter queue of the nightly collection schedule.',
    );
    acknowledge(
      grantsOf(collection.nightly.role),
      wildcard(`<${logicalId(collection.functions.CollectionNightly!)}.Arn>:*`),
      "The schedule's role may invoke the nightly function and its versions; CDK's grantInvoke names both.",
    );
  }

  const restApi = api.restApi;
  acknowledge(
    restApi,
    'AwsSolutions-APIG2',
    "Requests are validated in the functions with zod, which is what produces each API's exact 400 body shape, as its OpenAPI " +
      'document states it.',
  );
  acknowledge(
    restApi.node.findChild('CloudWatchRole'),
    'AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
    'The account-level role API Gateway needs to write access logs; AWS maintains it.',
  );
  acknowledge(
    restApi.deploymentStage,
    'AwsSolutions-APIG3',
    'AWS WAF carries a fixed monthly charge per web ACL; this product stays pay-per-request and limits abuse per link, per key and ' +
      'per client IP in the functions.',
  );
  acknowledge(
    restApi.deploymentStage,
    'AwsSolutions-APIG6',
    'Execution logs can record request paths, and webhook paths carry the link token; the access log (resource path only) records ' +
      'every request instead.',
  );
  for (const route of routes.filter((candidate) => gatewayOf(candidate) === 'restApi')) {
    const method = api.methods[route.id]!;
    if (!route.scope && !route.path.includes('{token}')) {
      const reason =
        "A public document: the API's OpenAPI description, which restates its contract and holds no data, so it asks for no credentials.";
      acknowledge(method, 'AwsSolutions-APIG4', reason);
      acknowledge(method, 'AwsSolutions-COG4', reason);
      continue;
    }
    const authentication = route.scope
      ? `API key with scope ${route.scope}, checked by the function against the api keys table (the operation's x-scope).`
      : "the secret link token in the path, checked by the function (the webhook API's only credential).";
    acknowledge(method, 'AwsSolutions-APIG4', `Authenticated by ${authentication}`);
    acknowledge(method, 'AwsSolutions-COG4', `Callers are external systems; authenticated by ${authentication}`);
  }
  const webhookReason =
    "the secret link token in the path, checked by the function (the webhook API's only credential); the documentation " +
    'routes and `$default` (404) hold no data and ask for none.';
  acknowledge(api.webhookApi, 'AwsSolutions-APIG4', `Authenticated by ${webhookReason}`);
  acknowledge(api.webhookApi, 'AwsSolutions-COG4', `Callers are external systems; authenticated by ${webhookReason}`);
  for (const method of Object.values(api.preflightMethods)) {
    const reason =
      'A CORS preflight: browsers send it without credentials (Fetch standard), and its answer only says which origins, methods and ' +
      'headers the API allows; the request that follows is authenticated by its API key.';
    acknowledge(method, 'AwsSolutions-APIG4', reason);
    acknowledge(method, 'AwsSolutions-COG4', reason);
  }

  const stateMachines: Record<StateMachineName, StateMachine> = { workflow: engine.stateMachine, collection: collection.stateMachine };
  const declared: [HandlerFunction, Declared][] = [
    ...routeFunctions(routes).map((fn) => [api.functions[fn.id]!, fn] as [HandlerFunction, Declared]),
    ...taskFunctions.map((task) => [(engine.functions[task.id] ?? collection.functions[task.id])!, task] as [HandlerFunction, Declared]),
  ];
  for (const [fn, declaration] of declared) {
    const role = fn.role!;
    const grants = grantsOf(role);
    acknowledge(
      role,
      'AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      'The AWS managed basic execution policy only lets the function write its own logs.',
    );
    acknowledge(
      grants,
      wildcard('*'),
      'Active tracing: X-Ray PutTraceSegments and PutTelemetryRecords accept no resource but *. test/infra checks that * carries no ' +
        'other action.',
    );
    for (const table of Object.keys(declaration.tables) as TableName[]) {
      if (TABLE_DEFINITIONS[table].indexes.length === 0) continue;
      acknowledge(
        grants,
        wildcard(`<${logicalId(data.tables[table])}.Arn>/index/*`),
        `Access to the ${table} table includes its own indexes; the wildcard never reaches another table.`,
      );
    }
    for (const grant of Object.values(declaration.buckets ?? {})) {
      for (const prefix of Object.keys(grant ?? {})) {
        acknowledge(
          grants,
          wildcard(`<${logicalId(data.bodiesBucket)}.Arn>/${prefix}*`),
          `Object keys are per event or execution; access is limited to the ${prefix} prefix and to object-level actions.`,
        );
      }
    }
    for (const [machine, access] of Object.entries(declaration.stateMachines ?? {}) as [StateMachineName, readonly string[]][]) {
      if (!access.includes('stop')) continue;
      acknowledge(
        grants,
        wildcard(
          `arn:<AWS::Partition>:states:${region}:<AWS::AccountId>:execution:` +
            `{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"${logicalId(stateMachines[machine])}"}]}]}:*`,
        ),
        `Stopping is granted on the executions of the ${machine} state machine only; each execution has a name of its own.`,
      );
    }
    if (declaration.invokesBedrock) {
      for (const model of engine.bedrockModels.filter(isInferenceProfile)) {
        acknowledge(
          grants,
          wildcard(`arn:<AWS::Partition>:bedrock:*::foundation-model/${model.replace(/^[^.]+\./, '')}`),
          `The cross-region inference profile ${model} routes a call to its model in another region; only the allowed model, in any ` +
            `region.`,
        );
      }
    }
    if (declaration.readsSecrets) {
      acknowledge(
        grants,
        wildcard(`arn:<AWS::Partition>:ssm:${region}:<AWS::AccountId>:parameter${engine.secretsPrefix}/*`),
        "Projects' tool secrets are parameters named per project and per secret under the stack's own prefix; read only.",
      );
    }
  }

  for (const [machine, stateMachine] of Object.entries(stateMachines) as [StateMachineName, StateMachine][]) {
    acknowledge(
      stateMachine,
      'AwsSolutions-SF1',
      'Standard workflows keep every execution history for 90 days at no charge; logging ALL events would bill each transition again ' +
        'in CloudWatch. Errors are logged.',
    );
    acknowledge(
      grantsOf(stateMachine.role),
      wildcard('*'),
      'Tracing (X-Ray PutTraceSegments, PutTelemetryRecords, sampling) and log delivery (logs:*LogDelivery*, resource policies) ' +
        'accept no resource but *.',
    );
    for (const task of taskFunctions) {
      if (!task.arnSubstitution || task.machine !== machine) continue;
      acknowledge(
        grantsOf(stateMachine.role),
        wildcard(`<${logicalId((engine.functions[task.id] ?? collection.functions[task.id])!)}.Arn>:*`),
        `Step Functions invokes the ${task.id} function's versions and aliases; the wildcard never reaches another function.`,
      );
    }
  }
}

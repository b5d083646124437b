import { Stack, Tags, Token, type StackProps, RemovalPolicy } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { routes } from '#functions/routes.ts';
import { Api } from './constructs/api.ts';
import { Data } from './constructs/data.ts';
import { WorkflowEngine } from './constructs/workflow-engine.ts';
import { Collection } from './constructs/collection.ts';
import { acknowledgeNagFindings } from './nag-acknowledgements.ts';
import { Operations, PROJECT_TAG_VALUE, parseOperationsMode, type OperationsMode } from './constructs/operations.ts';
import { parseBedrockModels } from './bedrock-models.ts';

export interface PlatformStackProps extends StackProps {
  /** @default RemovalPolicy.RETAIN */
  readonly dataRemovalPolicy?: RemovalPolicy;
  /**
   * Reserved concurrency of the step function (WorkflowEngine's `stepReservedConcurrency`).
   * @default CDK context `stepReservedConcurrency` (`cdk deploy -c stepReservedConcurrency=50`), else none
   */
  readonly stepReservedConcurrency?: number;
  /**
   * The Bedrock models published workflows may name (WorkflowEngine's `bedrockModels`).
   * @default CDK context `bedrockModels` (an array, or `-c bedrockModels=id1,id2`), else the region's `defaultBedrockModels`
   */
  readonly bedrockModels?: readonly string[];
  /** @default CDK context `alarmEmail`: subscribed to the alarm topic. */
  readonly alarmEmail?: string;
  /** @default CDK context `monthlyBudgetUsd`: a monthly cost budget alerting at 80 % and 100 %; none without it. */
  readonly monthlyBudgetUsd?: number;
  /** @default CDK context `costCenter`, else `unassigned`: the `CostCenter` cost allocation tag. */
  readonly costCenter?: string;
  /**
   * `lean` leaves out the dashboard and every alarm but the four that say accepted conversations are not reaching the
   * analysis (`LEAN_ALARM_METRICS`).
   * @default CDK context `operations` (`-c operations=lean`), else `full`
   */
  readonly operations?: OperationsMode;
}

/** Composes the product's constructs; nothing else. */
export class PlatformStack extends Stack {
  public readonly data: Data;
  public readonly api: Api;
  public readonly engine: WorkflowEngine;
  public readonly collection: Collection;
  public readonly operations: Operations;

  constructor(scope: Construct, id: string, props: PlatformStackProps = {}) {
    super(scope, id, props);
    // The Bedrock models' cross-region profiles are chosen by the region's geography (bedrock-models.ts), which a
    // template meant for any region could not do: a stack is synthesized for one region.
    if (Token.isUnresolved(this.region)) {
      throw new Error(
        `Stack ${id} needs a region (env.region): the Bedrock models it may call depend on it. ` +
          "bin/app.ts takes the CDK CLI's (AWS_REGION, else the profile's, else us-east-1)",
      );
    }
    // Read before anything is built, so that a mistyped value fails at once.
    const operationsMode = props.operations ?? parseOperationsMode(this.node.tryGetContext('operations'));
    this.data = new Data(this, 'Data', { removalPolicy: props.dataRemovalPolicy });
    this.engine = new WorkflowEngine(this, 'Engine', {
      data: this.data,
      stepReservedConcurrency: props.stepReservedConcurrency ?? numberFromContext(this, 'stepReservedConcurrency'),
      bedrockModels: props.bedrockModels ?? parseBedrockModels(this.node.tryGetContext('bedrockModels'), this.region),
    });
    this.collection = new Collection(this, 'Collection', { data: this.data });
    this.api = new Api(this, 'Api', { routes, data: this.data, stateMachines: { workflow: this.engine, collection: this.collection } });
    this.operations = new Operations(this, 'Operations', {
      api: this.api,
      engine: this.engine,
      collection: this.collection,
      data: this.data,
      alarmEmail: props.alarmEmail ?? stringFromContext(this, 'alarmEmail'),
      monthlyBudgetUsd: props.monthlyBudgetUsd ?? numberFromContext(this, 'monthlyBudgetUsd'),
      mode: operationsMode,
    });
    // Cost allocation tags on every taggable resource: finance splits the bill by project, component and cost center.
    Tags.of(this).add('Project', PROJECT_TAG_VALUE);
    Tags.of(this).add('CostCenter', props.costCenter ?? stringFromContext(this, 'costCenter') ?? 'unassigned');
    const components = { data: this.data, engine: this.engine, collection: this.collection, api: this.api, operations: this.operations };
    for (const [component, construct] of Object.entries(components)) Tags.of(construct).add('Component', component);
    acknowledgeNagFindings(this, { data: this.data, engine: this.engine, collection: this.collection, api: this.api });
  }
}

/** A number given on the command line (`-c name=50` arrives as a string); anything else fails the synthesis. */
function numberFromContext(scope: Construct, name: string): number | undefined {
  const value: unknown = scope.node.tryGetContext(name);
  if (value === undefined) return undefined;
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isFinite(number))
    throw new Error(`CDK context ${name} must be a number, got ${JSON.stringify(value)}`);
  return number;
}

function stringFromContext(scope: Construct, name: string): string | undefined {
  const value: unknown = scope.node.tryGetContext(name);
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '')
    throw new Error(`CDK context ${name} must be a non-empty string, got ${JSON.stringify(value)}`);
  return value.trim();
}

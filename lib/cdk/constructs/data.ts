import { CfnOutput, Duration, RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { BlockPublicAccess, Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import {
  BUCKET_ENV,
  OBJECT_ACTIONS,
  TABLE_ACTIONS,
  TABLE_ENV,
  deployedTableId,
  type Access,
  type BucketGrant,
  type BucketName,
  type BucketPrefix,
  type ObjectAccess,
  type TableName,
} from '#shared/resources.ts';
import { EXECUTION_RETENTION_MS, HANDOFF_RETENTION_MS, QUEUE_RETENTION_MS } from '#shared/limits.ts';
import { BUCKET_OUTPUTS, TABLE_OUTPUTS } from '#lib/cdk/stack-outputs.ts';
import { TABLE_DEFINITIONS } from '#lib/cdk/table-definitions.ts';

export interface DataProps {
  /**
   * What happens to tables and the bucket when the stack is deleted.
   * @default RemovalPolicy.RETAIN, since they hold accepted events that must never be lost
   */
  readonly removalPolicy?: RemovalPolicy;
}

const DAY_MS = 86_400_000;

/** Every table (on-demand, TTL, point-in-time recovery) and the bodies bucket, with grants that also set the function's environment. */
export class Data extends Construct {
  public readonly tables: Record<TableName, Table>;
  public readonly bodiesBucket: Bucket;

  constructor(scope: Construct, id: string, props: DataProps = {}) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.tables = Object.fromEntries(
      (Object.keys(TABLE_DEFINITIONS) as TableName[]).map((name) => [name, this.createTable(name, removalPolicy)]),
    ) as Record<TableName, Table>;

    this.bodiesBucket = new Bucket(this, 'BodiesBucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      versioned: true,
      removalPolicy,
      lifecycleRules: [
        {
          // Large webhook bodies live as long as their queued event (30 days) plus a margin for the last collection.
          prefix: 'inbound/',
          expiration: Duration.millis(QUEUE_RETENTION_MS + 7 * DAY_MS),
          noncurrentVersionExpiration: Duration.days(7),
        },
        {
          // Large run values live as long as their execution's items (TTL 90 days); history turns share that retention.
          prefix: 'executions/',
          expiration: Duration.millis(EXECUTION_RETENTION_MS + DAY_MS),
          noncurrentVersionExpiration: Duration.days(1),
        },
        {
          // Collected recordings and hand-off documents: the analysis platform reads them within days; 90 are kept.
          prefix: 'recordings/',
          expiration: Duration.millis(HANDOFF_RETENTION_MS),
          noncurrentVersionExpiration: Duration.days(1),
          // A transfer cut off where even its abort could not be sent leaves parts; they are billed until removed.
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        {
          prefix: 'handoff/',
          expiration: Duration.millis(HANDOFF_RETENTION_MS),
          noncurrentVersionExpiration: Duration.days(1),
        },
      ],
    });

    for (const [name, table] of Object.entries(this.tables)) {
      new CfnOutput(this, TABLE_OUTPUTS[name as TableName], { key: TABLE_OUTPUTS[name as TableName], value: table.tableName });
    }
    new CfnOutput(this, BUCKET_OUTPUTS.bodies, { key: BUCKET_OUTPUTS.bodies, value: this.bodiesBucket.bucketName });
  }

  /** Grants exactly `access` to a table and tells the function its name, in one step. */
  public bindTable(fn: LambdaFunction, name: TableName, access: Access): void {
    const table = this.tables[name];
    fn.addEnvironment(TABLE_ENV[name], table.tableName);
    // The table and, when it has any, its indexes.
    table.grant(fn, ...TABLE_ACTIONS[access]);
  }

  /**
   * Tells the function the bucket's name and grants exactly the declared object actions on exactly the declared
   * prefixes (`<prefix>*`), one statement per prefix; nothing lists or reconfigures the bucket.
   */
  public bindBucket(fn: LambdaFunction, name: BucketName, grant: BucketGrant): void {
    const bucket = this.bodiesBucket;
    fn.addEnvironment(BUCKET_ENV[name], bucket.bucketName);
    for (const [prefix, access] of Object.entries(grant) as [BucketPrefix, ObjectAccess][]) {
      fn.addToRolePolicy(new PolicyStatement({ actions: [...OBJECT_ACTIONS[access]], resources: [bucket.arnForObjects(`${prefix}*`)] }));
    }
  }

  private createTable(name: TableName, removalPolicy: RemovalPolicy): Table {
    const definition = TABLE_DEFINITIONS[name];
    const table = new Table(this, `${deployedTableId(name)}Table`, {
      partitionKey: { name: definition.partitionKey, type: AttributeType.STRING },
      sortKey: definition.sortKey ? { name: definition.sortKey, type: AttributeType.STRING } : undefined,
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: definition.timeToLiveAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // Encrypted at rest with a key DynamoDB owns, at no charge; an AWS managed KMS key bills KMS requests on top.
      encryption: TableEncryption.DEFAULT,
      removalPolicy,
    });
    for (const index of definition.indexes) {
      table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
        projectionType: ProjectionType.INCLUDE,
        nonKeyAttributes: [...index.projectedAttributes],
      });
    }
    return table;
  }
}

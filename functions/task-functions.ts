import { COLLECT_BATCH_MEMORY_MB } from './shared/limits.ts';
import { METERED, type Access, type BucketGrant, type BucketName, type StateMachineAccess, type TableName } from './shared/resources.ts';

/**
 * The functions the workflow state machine invokes, and the ASL substitution that names each one
 * (`${WorkflowStepFunctionArn}` and so on in `statemachines/workflow.asl.json`). The CDK stack creates them from
 * this table; the local Step Functions stand-in binds the same substitutions to the same handlers.
 */
export interface TaskFunction {
  readonly id: string;
  readonly handler: string;
  /** The ASL substitution naming it; none for a function the state machine does not invoke (a `trigger`). */
  readonly arnSubstitution?: string;
  /**
   * `executionEnded`: not a Task state but the EventBridge rule for this state machine's executions that end
   * FAILED, TIMED_OUT or ABORTED (locally the stand-in calls it with the same event).
   * `nightly`: the EventBridge Scheduler schedule at 00:00 Europe/Moscow (locally a timer of the twin).
   */
  readonly trigger?: 'executionEnded' | 'nightly';
  /** What it does with the workflow state machine (a grant of exactly those actions, and STATE_MACHINE_ARN). */
  readonly stateMachine?: readonly StateMachineAccess[];
  readonly tables: Partial<Record<TableName, Access>>;
  /** Per bucket, the key prefixes it touches and how; each a grant on exactly `<prefix>*`. */
  readonly buckets?: Partial<Record<BucketName, BucketGrant>>;
  /** Seconds; the step runs llm calls, so it may take minutes. */
  readonly timeoutSeconds: number;
  /** Lambda's memory size in MB (CDK and the twin); 256 when not set. */
  readonly memorySize?: number;
  /** Whether it calls Amazon Bedrock (llm, agent and image nodes with provider bedrock), on the allowed models only. */
  readonly invokesBedrock?: boolean;
  /** Whether it reads projects' tool secrets (SSM parameters under the stack's secrets prefix). */
  readonly readsSecrets?: boolean;
  /** Whether it announces hand-offs (on AWS: PutEvents on the stack's hand-off bus; locally: a file under DATA_DIR). */
  readonly announcesHandoffs?: boolean;
}

export const taskFunctions: readonly TaskFunction[] = [
  {
    id: 'WorkflowStep',
    handler: 'engine/handlers/workflow-step.ts',
    arnSubstitution: 'WorkflowStepFunctionArn',
    tables: { ...METERED, publications: 'read', executions: 'readWrite', conversations: 'readWrite', runEvents: 'readWrite' },
    // Large run values: context, node outputs, output, error, approval message, history turns.
    buckets: { bodies: { 'executions/': 'readWrite' } },
    timeoutSeconds: 900,
    invokesBedrock: true,
    readsSecrets: true,
  },
  {
    id: 'WorkflowAwaitApproval',
    handler: 'engine/handlers/await-approval.ts',
    arnSubstitution: 'AwaitApprovalFunctionArn',
    tables: { ...METERED, executions: 'readWrite', runEvents: 'readWrite' },
    // Reads a long approval message back for the stream's `complete` (status interrupted).
    buckets: { bodies: { 'executions/': 'read' } },
    timeoutSeconds: 30,
  },
  {
    id: 'WorkflowDeliverCallback',
    handler: 'engine/handlers/deliver-callback.ts',
    arnSubstitution: 'DeliverCallbackFunctionArn',
    tables: { ...METERED, executions: 'readWrite' },
    // Reads a large output back to post it.
    buckets: { bodies: { 'executions/': 'read' } },
    timeoutSeconds: 60,
  },
  {
    id: 'WorkflowExecutionEnded',
    handler: 'engine/handlers/execution-ended.ts',
    trigger: 'executionEnded',
    tables: { ...METERED, executions: 'readWrite', runEvents: 'readWrite' },
    // Reads a finished record whole (a long error) to end its run's log as recorded.
    buckets: { bodies: { 'executions/': 'read' } },
    stateMachine: ['start'],
    timeoutSeconds: 30,
  },
  {
    id: 'CollectBatch',
    handler: 'collection/handlers/collect-batch.ts',
    arnSubstitution: 'CollectBatchFunctionArn',
    // Reads the link, moves queued events on (conditional writes naming the run), keeps the run's checkpoint.
    tables: { ...METERED, collection: 'readWrite', inboundEvents: 'readWrite', links: 'read' },
    buckets: { bodies: { 'inbound/': 'read', 'recordings/': 'upload', 'handoff/': 'write' } },
    announcesHandoffs: true,
    // Pages of up to 200 events, 8 recordings at a time, each at most 2 minutes: the run checkpoints and loops.
    timeoutSeconds: 900,
    // Eight recordings at once, each streaming through its upload's part buffers (limits.ts says how it was measured).
    memorySize: COLLECT_BATCH_MEMORY_MB,
  },
  {
    id: 'CollectionNightly',
    handler: 'collection/handlers/nightly.ts',
    trigger: 'nightly',
    tables: { ...METERED, collection: 'read' },
    stateMachine: ['start'],
    timeoutSeconds: 60,
  },
];

import { COLLECT_BATCH_MEMORY_MB } from './shared/limits.ts';
import { METERED, type ResourceGrants, type StateMachineName } from './shared/resources.ts';

/**
 * The functions the state machines invoke, and the ASL substitution that names each one (`${WorkflowStepFunctionArn}`
 * and so on in `statemachines/<machine>.asl.json`), beside the functions that start their executions or react to
 * them. The CDK stack creates each in its machine's construct from this table; the local Step Functions stand-in
 * binds the same substitutions to the same handlers.
 */
export interface TaskFunction extends ResourceGrants {
  readonly id: string;
  readonly handler: string;
  /** The state machine it belongs to: the one whose definition names it, whose executions or schedule trigger it. */
  readonly machine: StateMachineName;
  /** The ASL substitution naming it in its machine's definition; none for a function no Task state invokes (a `trigger`). */
  readonly arnSubstitution?: string;
  /**
   * `executionEnded`: not a Task state but the EventBridge rule for its machine's executions that end FAILED,
   * TIMED_OUT or ABORTED (locally the stand-in calls it with the same event).
   * `nightly`: the EventBridge Scheduler schedule at the start of the night (shared/collection-night.ts; locally a timer of the twin).
   */
  readonly trigger?: 'executionEnded' | 'nightly';
  // Its grants (ResourceGrants): a function its own machine invokes cannot hold one on that machine (the definition
  // would name the function and the function the machine).
  /** Seconds; the step runs llm calls, so it may take minutes. */
  readonly timeoutSeconds: number;
  /** Lambda's memory size in MB (CDK and the twin); 256 when not set. */
  readonly memorySize?: number;
}

export const taskFunctions: readonly TaskFunction[] = [
  {
    id: 'WorkflowStep',
    machine: 'workflow',
    handler: 'engine/handlers/workflow-step.ts',
    arnSubstitution: 'WorkflowStepFunctionArn',
    tables: { ...METERED, publications: 'read', executions: 'readWrite', userState: 'readWrite', streamEvents: 'readWrite' },
    // Large run values: context, node outputs, output, error, approval message, history turns.
    buckets: { bodies: { 'executions/': 'readWrite' } },
    timeoutSeconds: 900,
    invokesBedrock: true,
    readsSecrets: true,
  },
  {
    id: 'WorkflowAwaitApproval',
    machine: 'workflow',
    handler: 'engine/handlers/await-approval.ts',
    arnSubstitution: 'AwaitApprovalFunctionArn',
    tables: { ...METERED, executions: 'readWrite', streamEvents: 'readWrite' },
    // Reads a long approval message back for the stream's `complete` (status interrupted).
    buckets: { bodies: { 'executions/': 'read' } },
    timeoutSeconds: 30,
  },
  {
    id: 'WorkflowDeliverCallback',
    machine: 'workflow',
    handler: 'engine/handlers/deliver-callback.ts',
    arnSubstitution: 'DeliverCallbackFunctionArn',
    tables: { ...METERED, executions: 'readWrite' },
    // Reads a large output back to post it.
    buckets: { bodies: { 'executions/': 'read' } },
    timeoutSeconds: 60,
  },
  {
    id: 'WorkflowExecutionEnded',
    machine: 'workflow',
    handler: 'engine/handlers/execution-ended.ts',
    trigger: 'executionEnded',
    tables: { ...METERED, executions: 'readWrite', streamEvents: 'readWrite' },
    // Reads a finished record whole (a long error) to end its execution's log as recorded.
    buckets: { bodies: { 'executions/': 'read' } },
    // A failed execution's callback is an execution of the workflow machine (`callback-<id>`).
    stateMachines: { workflow: ['start'] },
    timeoutSeconds: 30,
  },
  {
    id: 'CollectBatch',
    machine: 'collection',
    handler: 'collection/handlers/collect-batch.ts',
    arnSubstitution: 'CollectBatchFunctionArn',
    // Reads the link, moves queued events on (conditional writes naming the sweep), keeps the sweep's checkpoint.
    tables: { ...METERED, collection: 'readWrite', inboundEvents: 'readWrite', links: 'read' },
    buckets: { bodies: { 'inbound/': 'read', 'recordings/': 'upload', 'handoff/': 'write' } },
    announcesHandoffs: true,
    // Pages of up to 200 events, 8 recordings at a time, each at most 2 minutes: the sweep checkpoints and loops.
    timeoutSeconds: 900,
    // Eight recordings at once, each streaming through its upload's part buffers (limits.ts says how it was measured).
    memorySize: COLLECT_BATCH_MEMORY_MB,
  },
  {
    id: 'CollectionNightly',
    machine: 'collection',
    handler: 'collection/handlers/nightly.ts',
    trigger: 'nightly',
    tables: { ...METERED, collection: 'read' },
    stateMachines: { collection: ['start'] },
    timeoutSeconds: 60,
  },
];

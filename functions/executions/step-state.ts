import type { WorkflowDefinition } from '#workflows/definition-schema.ts';
import type { ExecutionUsage } from './execution-usage.ts';
import type { CostUnits, ModelUsage } from '#shared/metering/cost-meter.ts';

/**
 * The contract between the state machine and the step function: what a Step Functions state holds (ids and a
 * cursor, never run data), and what an approval's task token answers with. The API side starts runs with it
 * without loading the step's code.
 */
export interface Cursor {
  node: string;
  steps: number;
  /** Orders this execution's history turns. */
  turns: number;
  /** Version of the stored node outputs (`outputs#<id>#<n>`); 0 while none were stored. */
  outputs: number;
  /** The approval node whose decision `{{approval.*}}` reads: its output is `{decision, feedback}`. */
  approval_node: string | null;
  /** Models, tokens, tools and images so far; absent on cursors from before it was counted. */
  usage?: ExecutionUsage;
  /** The pay-per-request units the execution's steps spent so far (what finance's cost per run adds up). */
  cost?: Partial<CostUnits>;
  /**
   * What each model did so far, by logical model id (tokens incl. cache reads and writes, images by class): what
   * prices `usage` per model. A few counters per model the execution used (bounded by the catalog): the state stays small.
   */
  models?: ModelUsage;
}

/** What AwaitApproval's task token answers with (SendTaskSuccess output). */
export interface ApprovalDecision {
  decision: 'approved' | 'rejected';
  feedback: string;
  approval_id: string;
}

/** The state machine's state: the step's input and output. Ids, the cursor and what the ASL's Choice states read. */
export interface StepState {
  execution_id: string;
  cursor: Cursor;
  decision?: ApprovalDecision;
  /** Set by the state machine's Catch: an error the step itself could not record. */
  failure?: { Error?: string; Cause?: string };
  /** `stopped`: the step found the execution cancelled; the state machine waits for the stop's StopExecution (AwaitStop). */
  outcome?: 'wait' | 'approval' | 'finished' | 'stopped';
  wait_seconds?: number;
  /** The approval being reached; its message is in the execution item (or S3), never here. */
  approval?: { approval_id: string; node_id: string };
  /** Whether a callback must be delivered now that the execution finished. */
  callback?: boolean;
}

/** `turns`: how many of the execution's history turns were written before its first step (execute writes the user's message). */
export function initialCursor(definition: WorkflowDefinition, turns = 0): Cursor {
  return { node: definition.start, steps: 0, turns, outputs: 0, approval_node: null };
}

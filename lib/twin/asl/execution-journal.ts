import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Json } from './paths.ts';

/**
 * Executions of the local Step Functions, one JSON file each under `$DATA_DIR/step-functions/`, named after the state
 * machine and the execution (names are unique per state machine), rewritten at every state transition (write, then
 * rename: a killed process leaves the previous version, never half a file). On AWS executions, task tokens and timers
 * are durable; this makes them durable on the twin too. The files are the record: the runner keeps only running
 * executions in memory and reads an ended one from here when asked about it.
 */
export interface Position {
  state: string;
  /** The state's raw input. */
  input: Json;
  /** When the current attempt began: TimeoutSeconds and Wait count from here. */
  startedAt: number;
  /** Retries used so far, per retrier of the state. */
  attempts: number[];
  /** A retry waiting for its backoff to end. */
  retryAt?: number;
  /** A Wait state's wake-up time. */
  wakeAt?: number;
  /** A `.waitForTaskToken` task's token, once its function was invoked. */
  token?: string;
  /** SendTaskSuccess/Failure's answer, kept from the moment the API acknowledged it. */
  tokenAnswer?: { output: Json } | { error: string; cause: string };
}

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface ExecutionRecord {
  executionArn: string;
  stateMachineArn: string;
  name: string;
  input: string;
  status: ExecutionStatus;
  startDate: number;
  stopDate?: number;
  output?: string;
  error?: string;
  cause?: string;
  stateTransitions: number;
  position?: Position;
  /** Whether subscribers were told of a failed, timed-out or aborted end (EventBridge delivers at least once). */
  endNotified?: boolean;
  /** The execution's task tokens that were answered, timed out or abandoned, and the error a late answer gets. */
  closedTokens?: Record<string, 'TaskTimedOut' | 'TaskDoesNotExist'>;
}

export class ExecutionJournal {
  private readonly directory: string;

  constructor(dataDir: string) {
    this.directory = join(dataDir, 'step-functions');
    mkdirSync(this.directory, { recursive: true });
  }

  save(record: ExecutionRecord): void {
    const file = join(this.directory, fileNameOf(record));
    writeFileSync(`${file}.tmp`, JSON.stringify(record));
    renameSync(`${file}.tmp`, file);
  }

  /** One execution by its ARN, if this journal has it. */
  load(executionArn: string): ExecutionRecord | undefined {
    const names = namesOf(executionArn);
    if (!names) return undefined;
    const [machine, name] = names;
    for (const file of [`${encodeURIComponent(machine)}.${encodeURIComponent(name)}.json`, legacyFileName(name)]) {
      let record: ExecutionRecord;
      try {
        record = JSON.parse(readFileSync(join(this.directory, file), 'utf8')) as ExecutionRecord;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw error;
      }
      if (record.executionArn === executionArn) return record;
    }
    return undefined;
  }

  /** Every execution, read one file at a time (a long history is never in memory at once). */
  *loadAll(): Generator<ExecutionRecord> {
    for (const file of readdirSync(this.directory)) {
      if (!file.endsWith('.json')) continue;
      const record = JSON.parse(readFileSync(join(this.directory, file), 'utf8')) as ExecutionRecord;
      // Files written when the twin had one state machine are named after the execution alone.
      if (file !== fileNameOf(record)) renameSync(join(this.directory, file), join(this.directory, fileNameOf(record)));
      yield record;
    }
  }
}

/** `<state machine name>.<execution name>.json`: neither name can hold a dot. */
function fileNameOf(record: ExecutionRecord): string {
  return `${encodeURIComponent(record.stateMachineArn.split(':').pop()!)}.${encodeURIComponent(record.name)}.json`;
}

/** The name of a file written when the twin had one state machine (`resume` renames them). */
function legacyFileName(executionName: string): string {
  return `${encodeURIComponent(executionName)}.json`;
}

/** The state machine's and the execution's names in `arn:<partition>:states:<region>:<account>:execution:<machine>:<name>`. */
function namesOf(executionArn: string): [string, string] | undefined {
  const parts = executionArn.split(':');
  if (parts.length !== 8 || parts[2] !== 'states' || parts[5] !== 'execution' || !parts[6] || !parts[7]) return undefined;
  return [parts[6], parts[7]];
}

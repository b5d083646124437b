import { randomBytes } from 'node:crypto';
import type { ExecutionRecord } from './execution-journal.ts';
import type { Json } from './paths.ts';
import { StatesError } from './states-error.ts';

/**
 * Task tokens of `.waitForTaskToken` tasks. A token is an unguessable part, then its execution's ARN (base64url), as
 * AWS's tokens carry what they belong to: a late SendTaskSuccess or SendTaskFailure, after a restart too, finds in its
 * execution's record how the token closed and gets the error AWS gives for it.
 */
type ClosedAs = NonNullable<ExecutionRecord['closedTokens']>[string];

/** A token's random part: what makes it unguessable (base64url of 48 bytes, 64 characters). */
const TOKEN_NONCE_CHARS = 64;

export function newTaskToken(executionArn: string): string {
  return randomBytes(48).toString('base64url') + Buffer.from(executionArn, 'utf8').toString('base64url');
}

/** The execution a token names, if it is one this runner could have issued. */
function executionOfToken(taskToken: string): string | undefined {
  const named = taskToken.slice(TOKEN_NONCE_CHARS);
  if (taskToken.length <= TOKEN_NONCE_CHARS || !/^[A-Za-z0-9_-]+$/.test(named)) return undefined;
  const executionArn = Buffer.from(named, 'base64url').toString('utf8');
  return executionArn.includes(':execution:') ? executionArn : undefined;
}

/** Records how a token closed, once (the first way it closed is the one a late answer hears); false if it already was. */
export function markClosed(record: ExecutionRecord, taskToken: string, closedAs: ClosedAs): boolean {
  const closed = (record.closedTokens ??= {});
  if (closed[taskToken]) return false;
  closed[taskToken] = closedAs;
  return true;
}

export interface PendingToken {
  executionArn: string;
  resolve: (output: Json) => void;
  reject: (error: Error) => void;
}

/** The tokens that tasks of running executions wait on, in memory only: a restart registers them again as it resumes. */
export class PendingTokens {
  private readonly waiting = new Map<string, PendingToken>();

  /** Settles with SendTaskSuccess's output, or rejects with SendTaskFailure's error or the task's end. */
  wait(taskToken: string, executionArn: string): Promise<Json> {
    const answered = new Promise<Json>((resolve, reject) => this.waiting.set(taskToken, { executionArn, resolve, reject }));
    answered.catch(() => undefined);
    return answered;
  }

  /**
   * The task waiting on a token, no longer waiting; a token nobody waits on is refused as AWS refuses it, from how its
   * execution (looked up by `findExecution`) closed it.
   */
  take(taskToken: string, findExecution: (executionArn: string) => ExecutionRecord | undefined): PendingToken {
    const pending = this.waiting.get(taskToken);
    if (pending) {
      this.waiting.delete(taskToken);
      return pending;
    }
    const executionArn = executionOfToken(taskToken);
    const closedAs = executionArn === undefined ? undefined : findExecution(executionArn)?.closedTokens?.[taskToken];
    if (closedAs === 'TaskTimedOut') throw new StatesError('TaskTimedOut', 'Task Timed Out');
    if (closedAs) throw new StatesError('TaskDoesNotExist', 'Task does not exist anymore');
    throw new StatesError('InvalidToken', 'Invalid Token');
  }

  /** The task's own outcome closed its token (the caller records how). */
  forget(taskToken: string): void {
    this.waiting.delete(taskToken);
  }

  /** The execution ended: its waiting tasks are abandoned, and a late answer to one hears TaskDoesNotExist. */
  abandonAll(record: ExecutionRecord): void {
    for (const [token, pending] of this.waiting) {
      if (pending.executionArn !== record.executionArn) continue;
      this.waiting.delete(token);
      markClosed(record, token, 'TaskDoesNotExist');
      pending.reject(new StatesError('States.Aborted', 'The execution ended'));
    }
  }

  /** The process closes: every wait ends, nothing is recorded (the next process waits on the same tokens). */
  close(): void {
    for (const pending of this.waiting.values()) pending.reject(new StatesError('States.Aborted', 'The local Step Functions closed'));
    this.waiting.clear();
  }
}

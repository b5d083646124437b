import { Duration } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { TaskFunction } from '#functions/task-functions.ts';
import type { Access, BucketGrant, BucketName, TableName } from '#shared/resources.ts';
import type { Data } from './data.ts';
import { HandlerFunction } from './handler-function.ts';

/**
 * A function of the task table with the tables and bucket prefixes its entry declares (each an environment variable
 * and a grant of exactly that access). What only one machine's functions need (Bedrock, secrets, the hand-off bus,
 * state machine grants) its machine's construct adds.
 */
export function createTaskFunction(scope: Construct, task: TaskFunction, data: Data): HandlerFunction {
  const fn = new HandlerFunction(scope, task.id, {
    handler: task.handler,
    timeout: Duration.seconds(task.timeoutSeconds),
    memorySize: task.memorySize,
  });
  for (const [table, access] of Object.entries(task.tables) as [TableName, Access][]) data.bindTable(fn, table, access);
  for (const [bucket, grant] of Object.entries(task.buckets ?? {}) as [BucketName, BucketGrant][]) data.bindBucket(fn, bucket, grant);
  return fn;
}

/** The task entries of one state machine, with the substitution each Task state names it by. */
export function tasksOf(taskFunctions: readonly TaskFunction[], machine: TaskFunction['machine']) {
  const own = taskFunctions.filter((task) => task.machine === machine);
  const invoked = own.filter((task): task is TaskFunction & { arnSubstitution: string } => task.arnSubstitution !== undefined);
  for (const task of invoked) {
    // The definition names the function; a grant on the same machine would make the function name the machine too.
    if (task.stateMachines?.[machine])
      throw new Error(`${task.id} is a task of the ${machine} state machine and cannot also be granted access to it`);
  }
  return { own, invoked };
}

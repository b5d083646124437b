import type { WorkflowNode } from '#workflows/definition-schema.ts';
import { executeAgent } from './agent.ts';
import { executeApproval } from './approval.ts';
import { executeCondition } from './condition.ts';
import { executeEnd } from './end.ts';
import { executeFail } from './fail.ts';
import { executeImage } from './image.ts';
import { executeLlm } from './llm.ts';
import { executeMemory } from './memory.ts';
import type { NodeExecutor } from './node-context.ts';
import { executeWait } from './wait.ts';

/** Each node type's executor: a type of the schema missing here does not compile. */
const EXECUTORS: { [T in WorkflowNode['type']]: NodeExecutor<T> } = {
  llm: executeLlm,
  agent: executeAgent,
  image: executeImage,
  memory: executeMemory,
  condition: executeCondition,
  wait: executeWait,
  approval: executeApproval,
  fail: executeFail,
  end: executeEnd,
};

export function executorOf<T extends WorkflowNode['type']>(type: T): NodeExecutor<T> {
  return EXECUTORS[type];
}

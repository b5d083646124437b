import { conditionHolds } from '#workflows/condition.ts';
import type { NodeExecutor } from './node-context.ts';

/** The first case that holds picks the next node, else `else`; the output is the node picked. */
export const executeCondition: NodeExecutor<'condition'> = async ({ step, node, scope, setOutput }) => {
  let next = node.else;
  for (const branch of node.cases) {
    if (await conditionHolds(branch.if, scope)) {
      next = branch.next;
      break;
    }
  }
  setOutput(next, { next });
  step.cursor.node = next;
  return undefined;
};

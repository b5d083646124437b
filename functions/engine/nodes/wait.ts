import type { NodeExecutor } from './node-context.ts';

/** The state machine waits (a Wait state, which costs nothing while it waits), then the next step goes on from `next`. */
export const executeWait: NodeExecutor<'wait'> = async ({ step, nodeId, node }) => {
  step.events.push({ type: 'node_update', data: { node_id: nodeId, type: node.type, status: 'waiting', seconds: node.seconds } });
  step.cursor.node = node.next;
  return { pause: { outcome: 'wait', wait_seconds: node.seconds } };
};

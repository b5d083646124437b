import { newId } from '#shared/secrets.ts';
import { renderText } from '#workflows/template.ts';
import { assertResultSize, type NodeExecutor } from './node-context.ts';

/** The execution waits for a decision on the rendered message. */
export const executeApproval: NodeExecutor<'approval'> = async ({ step, nodeId, node, scope }) => {
  // The cursor stays on the approval node; the decision picks the edge when the execution resumes.
  const message = renderText(node.message, scope);
  assertResultSize(`The approval message of ${nodeId}`, message);
  const approvalId = newId('apr_');
  step.events.push({ type: 'node_update', data: { node_id: nodeId, type: node.type, status: 'waiting', approval_id: approvalId } });
  return { pause: { outcome: 'approval', approval: { approval_id: approvalId, node_id: nodeId }, message } };
};

import { renderValue } from '#workflows/template.ts';
import { assertResultSize, type NodeExecutor } from './node-context.ts';

/** The execution completes with the rendered output (text or structured). */
export const executeEnd: NodeExecutor<'end'> = async ({ nodeId, node, scope }) => {
  const output = renderValue(node.output, scope);
  assertResultSize(`The output of ${nodeId}`, output);
  return { end: { status: 'completed', output } };
};

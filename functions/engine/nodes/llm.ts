import { modelsIn, usageIn, type NodeExecutor } from './node-context.ts';

/** One model call; its reply is the node's output and the thread's next turn, its tokens stream as they come. */
export const executeLlm: NodeExecutor<'llm'> = async ({ deps, step, nodeId, node, scope, setOutput, appendTurn }) => {
  const { cursor } = step;
  const onToken = (content: string) => step.events.push({ type: 'token', data: { content, node_id: nodeId } });
  const reply = await deps.providers[node.provider].generate({
    node,
    scope,
    onToken,
    usage: usageIn(cursor),
    models: modelsIn(cursor),
  });
  setOutput(reply);
  await appendTurn('assistant', reply);
  cursor.node = node.next;
  return undefined;
};

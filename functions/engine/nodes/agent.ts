import { runAgent } from '../agent-runner.ts';
import { modelsIn, usageIn, type NodeExecutor } from './node-context.ts';

/** An agent with its tools, handing off to other agents; the last one's answer is the output of every agent that took part. */
export const executeAgent: NodeExecutor<'agent'> = async ({ deps, step, nodeId, node, scope, setOutput, appendTurn }) => {
  const { execution, cursor } = step;
  // Definitions published before agents existed have no `tools`.
  const assignment = {
    definition: step.definition!,
    projectId: execution.project_id,
    nodeId,
    node,
    scope,
    events: step.events,
    usage: usageIn(cursor),
    models: modelsIn(cursor),
  };
  const result = await runAgent(assignment, deps.agents);
  for (const agentId of result.agents) step.nodes[agentId] = { output: result.output };
  setOutput(result.output);
  await appendTurn('assistant', result.output);
  cursor.node = result.next;
  return undefined;
};

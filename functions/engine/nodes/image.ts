import { NOVA_CANVAS_MAX_PROMPT_CHARS } from '#shared/limits.ts';
import { countModel, imageCounter, SCRIPTED_MODEL } from '#shared/metering/cost-meter.ts';
import { renderText } from '#workflows/template.ts';
import { ExecutionFailure } from '../execution-failure.ts';
import { modelsIn, usageIn, type NodeExecutor } from './node-context.ts';

/** One picture, kept under the execution; the output is where it is and its size. */
export const executeImage: NodeExecutor<'image'> = async ({ deps, step, nodeId, node, scope, setOutput }) => {
  const { execution, cursor } = step;
  const prompt = renderText(node.prompt, scope);
  // Checked on the rendered text: the definition's template may grow or vanish once its values are filled in.
  if (node.provider === 'bedrock' && (prompt.length < 1 || prompt.length > NOVA_CANVAS_MAX_PROMPT_CHARS)) {
    throw new ExecutionFailure(
      `Image node ${nodeId}: the rendered prompt is ${prompt.length} characters; the image model takes ` +
        `1-${NOVA_CANVAS_MAX_PROMPT_CHARS}`,
    );
  }
  // The logical model id: the node's on Bedrock (publish refuses a bedrock image node without one), `scripted` offline.
  const modelId = node.provider === 'bedrock' ? node.model_id : SCRIPTED_MODEL;
  if (modelId === undefined) throw new ExecutionFailure(`Image node ${nodeId} names no model_id for provider bedrock`);
  const png = await deps.images.models[node.provider].generate({
    prompt,
    width: node.width,
    height: node.height,
    seed: node.seed,
    quality: node.quality,
    modelId,
  });
  usageIn(cursor).images += 1;
  // Priced by the logical model id (`scripted` draws offline, whatever `model_id` a stored definition carries), quality and size class.
  countModel(modelsIn(cursor), modelId, { [imageCounter(node.width, node.height, node.quality)]: 1 });
  const stored = await (await deps.images.store()).put(execution.execution_id, `${nodeId}-${cursor.steps}`, png);
  const image = { ...stored, width: node.width, height: node.height };
  step.events.push({ type: 'image', data: { node_id: nodeId, ...image } });
  setOutput(image);
  cursor.node = node.next;
  return undefined;
};

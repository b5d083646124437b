import { MAX_MEMORY_VALUE_BYTES } from '#shared/limits.ts';
import { renderValue } from '#workflows/template.ts';
import { ExecutionFailure } from '../execution-failure.ts';
import type { NodeExecutor } from './node-context.ts';

/** Writes the user's memory; the values are the node's output and the scope's `memory` from here on. */
export const executeMemory: NodeExecutor<'memory'> = async ({ deps, step, nodeId, node, scope, setOutput }) => {
  const { execution, cursor } = step;
  const values = Object.create(null) as Record<string, unknown>;
  for (const [name, template] of Object.entries(node.set)) {
    const value = renderValue(template, scope);
    const bytes = Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
    if (bytes > MAX_MEMORY_VALUE_BYTES) {
      throw new ExecutionFailure(
        `Memory node ${nodeId} sets ${name} to ${bytes} bytes; a memory value is at most ${MAX_MEMORY_VALUE_BYTES} bytes`,
      );
    }
    values[name] = value;
  }
  await deps.userState.writeMemory(execution.project_id, execution.user_id, values);
  Object.assign(scope.memory, values);
  setOutput(values);
  cursor.node = node.next;
  return undefined;
};

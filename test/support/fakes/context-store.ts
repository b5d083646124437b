import type { ExecutionContext } from '#executions/execution-model.ts';
import type { NodeOutputs, ContextStore } from '#executions/context-store.ts';
import { ttlSeconds } from '#shared/time.ts';
import { Faults } from './faults.ts';

/** The execution items of the executions table in memory (`run#<id>`, `outputs#<id>#<n>`). */
export class InMemoryContextStore implements ContextStore {
  readonly contexts = new Map<string, { context: ExecutionContext; expires_at: number }>();
  readonly outputs = new Map<string, { nodes: NodeOutputs; expires_at: number }>();
  readonly faults = new Faults<keyof ContextStore>();

  async createContext(run: ExecutionContext, expiresAtMs: number): Promise<void> {
    await this.faults.enter('createContext');
    this.contexts.set(run.execution_id, { context: structuredClone(run), expires_at: ttlSeconds(expiresAtMs) });
  }

  async readContext(executionId: string): Promise<ExecutionContext & { expires_at: number }> {
    await this.faults.enter('readContext');
    const item = this.contexts.get(executionId);
    if (!item) throw new Error(`Execution item run#${executionId} is missing`);
    return { ...structuredClone(item.context), expires_at: item.expires_at };
  }

  async writeOutputs(executionId: string, version: number, nodes: NodeOutputs, expiresAt: number): Promise<void> {
    await this.faults.enter('writeOutputs');
    this.outputs.set(`${executionId}#${version}`, { nodes: structuredClone(nodes), expires_at: expiresAt });
  }

  async readOutputs(executionId: string, version: number): Promise<NodeOutputs> {
    await this.faults.enter('readOutputs');
    if (version === 0) return {};
    const item = this.outputs.get(`${executionId}#${version}`);
    if (!item) throw new Error(`Execution item outputs#${executionId}#${version} is missing`);
    return structuredClone(item.nodes);
  }
}

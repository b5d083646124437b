import type { WorkflowDefinition } from '#workflows/definition-schema.ts';
import type { PublicationsRepository } from '#workflows/publications-repository.ts';
import type { UserStateRepository } from '#executions/user-state-repository.ts';
import type { ExecutionsRepository } from '#executions/executions-repository.ts';
import type { ExecutionContext } from '#executions/execution-model.ts';
import type { NodeOutputs, ContextStore } from '#executions/context-store.ts';
import type { Cursor } from '#executions/step-state.ts';
import type { StreamEventBuffer } from '#executions/stream-event-log.ts';
import type { StreamEventsRepository } from '#executions/stream-events-repository.ts';
import type { LlmProvider } from './llm-provider.ts';
import type { AgentDeps } from './agent-runner.ts';
import type { ImageModel } from './images/image-model.ts';
import type { ImageStore } from './images/image-store.ts';

/** What a step needs: its stores, and the models and tools its nodes call. */
export interface StepDeps {
  executions: ExecutionsRepository;
  userState: UserStateRepository;
  publications: PublicationsRepository;
  contexts: ContextStore;
  events: StreamEventsRepository;
  providers: Record<'scripted' | 'bedrock', LlmProvider>;
  /** Agents' models and tools (HTTP, MCP). */
  agents: AgentDeps;
  /** Image nodes' models, and where images go (loaded with the first image). */
  images: { models: Record<'scripted' | 'bedrock', ImageModel>; store(): Promise<ImageStore> };
  now: () => number;
}

/** The execution as one step sees it: the context, node outputs (a null-prototype map: node ids are the publisher's), and the cursor. */
export interface StepInvocation {
  execution: ExecutionContext;
  expiresAt: number;
  nodes: NodeOutputs;
  cursor: Cursor;
  /** Whether a node output changed since the stored version. */
  changed: boolean;
  /** The execution's event log (what `/stream` shows), written in batches. */
  events: StreamEventBuffer;
  /** The definition with the execution's overrides, once loaded. */
  definition?: WorkflowDefinition;
}

import type { WorkflowDefinition } from '#workflows/definition-schema.ts';

/** A tool's answer for the model; a failure is an answer too (`ok: false`), never an exception, so the execution goes on. */
export type ToolAnswer = { ok: true; result: unknown } | { ok: false; error: string };

/** A tool as a model sees it: what the `toolConfig` of a Bedrock request lists. */
export interface ToolDescriptor {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The tools one agent may use, by the names its model sees; `close` ends the MCP sessions it opened. */
export interface Toolbox {
  describe(): Promise<ToolDescriptor[]>;
  call(name: string, args: Record<string, unknown>): Promise<ToolAnswer>;
  close(): Promise<void>;
}

export interface ToolboxRequest {
  definition: WorkflowDefinition;
  /** The agent's `tools`: names of the workflow's tool entries (an MCP entry brings each tool of its allow-list). */
  toolNames: readonly string[];
  /** Whose secrets `{{secret.NAME}}` reads. */
  projectId: string;
}

export interface ToolKit {
  open(request: ToolboxRequest): Toolbox;
}

/** Where `{{secret.NAME}}` values come from (SSM Parameter Store on AWS and on the twin). */
export interface SecretSource {
  /** The values of the names that exist; a missing name is absent from the map. */
  values(projectId: string, names: readonly string[]): Promise<Map<string, string>>;
}

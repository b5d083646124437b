import type { WorkflowDefinition } from './definition-schema.ts';

const HISTORY_PLACEHOLDER = /\{\{\s*history\s*\}\}/;
/** `memory` as a template path or a JSONata name; the `"type":"memory"` of memory nodes does not read it. */
const MEMORY_REFERENCE = /\bmemory\b/;

/** Which stored parts of the scope a definition can read, judged from its text (it may over-approximate, never under-). */
export function scopeNeeds(definition: WorkflowDefinition): { memory: boolean; history: boolean } {
  const text = JSON.stringify(definition.nodes).replaceAll('"type":"memory"', '');
  return { memory: MEMORY_REFERENCE.test(text), history: HISTORY_PLACEHOLDER.test(text) };
}

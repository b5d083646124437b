/**
 * `{{path}}` templates of workflow definitions. Paths read the execution's scope: `input.x`, `memory.x`,
 * `nodes.<id>.output`, `approval.feedback`, `history`. A missing value renders as an empty string.
 * A template that is exactly one placeholder keeps the value's own type, so an `end` output can pass
 * structured data through; inside text, non-string values render as JSON.
 */
export interface TemplateScope {
  input: Record<string, unknown>;
  memory: Record<string, unknown>;
  nodes: Record<string, { output: unknown }>;
  approval: { feedback: string; decision: string } | null;
  history: string;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;
const WHOLE_PLACEHOLDER = /^\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}$/;

function lookup(scope: TemplateScope, path: string): unknown {
  let value: unknown = scope;
  for (const segment of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Renders a template string to text. */
export function renderText(template: string, scope: TemplateScope): string {
  return template.replace(PLACEHOLDER, (_, path: string) => asText(lookup(scope, path)));
}

/** Renders any JSON value whose strings are templates (structured `end` outputs). */
export function renderValue(value: unknown, scope: TemplateScope): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE_PLACEHOLDER.exec(value);
    if (whole) return lookup(scope, whole[1]!) ?? '';
    return renderText(value, scope);
  }
  if (Array.isArray(value)) return value.map((item) => renderValue(item, scope));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renderValue(item, scope)]));
  }
  return value;
}

/** A hand-off is a tool the model can call; its name says where it goes (`transfer_to_<node>`). */
export const HANDOFF_TOOL_PREFIX = 'transfer_to_';

/** `{{secret.NAME}}`: read at call time, only in tool URLs and headers. */
export const SECRET_PLACEHOLDER = /\{\{\s*secret\.([A-Za-z0-9_.-]+)\s*\}\}/g;

/** The secret names a tool's URL and header templates use. */
export function secretNamesIn(templates: readonly string[]): string[] {
  return [...new Set(templates.flatMap((template) => [...template.matchAll(SECRET_PLACEHOLDER)].map((match) => match[1]!)))];
}

/** Every `{{secret.…}}` as written, valid name or not: publishing refuses the ones the placeholder would not fill. */
export function secretReferencesIn(templates: readonly string[]): string[] {
  return [...new Set(templates.flatMap((template) => [...template.matchAll(/\{\{\s*secret\.([^}]*?)\s*\}\}/g)].map((match) => match[1]!)))];
}

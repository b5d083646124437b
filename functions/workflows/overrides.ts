import { ValidationError, type FieldIssue } from '#shared/errors.ts';
import { toFieldIssues } from '#shared/http/field-issues.ts';
import { isJsonObject } from '#shared/json-object.ts';
import { modelIssues, nodeProblems, nodeSchema, OVERRIDABLE_PARAMS, type WorkflowDefinition } from './definition-schema.ts';

export type Overrides = Record<string, Record<string, unknown>>;

/**
 * Applies an execution's `overrides` (`{node_id: {param: value}}`) to a definition. Only parameters can change,
 * never edges; an unknown node or parameter, or a value the node's schema refuses, is a 400 naming it.
 * Node ids and parameter names are the caller's: they are only ever compared with the definition's own keys,
 * so `constructor`, `hasOwnProperty` or `__proto__` are unknown names like any other. With `now` (an execution being
 * started), an overridden node's model must be one Bedrock still serves; the steps of a started run pass no clock.
 */
export function applyOverrides(definition: WorkflowDefinition, overrides: Overrides, now?: number): WorkflowDefinition {
  const issues: FieldIssue[] = [];
  const nodes = new Map(Object.entries(definition.nodes));
  for (const [nodeId, params] of Object.entries(overrides)) {
    const node = nodes.get(nodeId);
    if (!node) {
      issues.push({ field: `overrides.${nodeId}`, message: `workflow ${definition.id} has no node ${nodeId}` });
      continue;
    }
    if (!isJsonObject(params)) {
      issues.push({ field: `overrides.${nodeId}`, message: 'must be a JSON object' });
      continue;
    }
    const allowed = OVERRIDABLE_PARAMS[node.type];
    const known: Record<string, unknown> = {};
    for (const [param, value] of Object.entries(params)) {
      if (allowed.includes(param)) {
        known[param] = value;
        continue;
      }
      const choices = allowed.length > 0 ? `one of ${allowed.join(', ')}` : 'none';
      issues.push({ field: `overrides.${nodeId}.${param}`, message: `not a parameter of this ${node.type} node (${choices})` });
    }
    const parsed = nodeSchema.safeParse({ ...node, ...known });
    if (!parsed.success) {
      issues.push(...toFieldIssues(parsed.error, ['overrides', nodeId]));
      continue;
    }
    for (const problem of nodeProblems(parsed.data))
      issues.push({ field: `overrides.${nodeId}.${problem.field}`, message: problem.message });
    if (now !== undefined)
      for (const message of modelIssues(parsed.data, now).refuse) issues.push({ field: `overrides.${nodeId}.model_id`, message });
    nodes.set(nodeId, parsed.data);
  }
  if (issues.length > 0) throw new ValidationError(issues, 'Invalid overrides');
  return { ...definition, nodes: Object.fromEntries(nodes) };
}

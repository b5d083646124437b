import { ValidationError, type FieldIssue } from '../shared/errors.ts';
import { toFieldIssues } from '../shared/field-issues.ts';
import { nodeProblems, nodeSchema, OVERRIDABLE_PARAMS, type WorkflowDefinition } from './definition-schema.ts';

export type Overrides = Record<string, Record<string, unknown>>;

/**
 * Applies a run's `overrides` (`{node_id: {param: value}}`) to a definition. Only parameters can change,
 * never edges; an unknown node or parameter, or a value the node's schema refuses, is a 400 naming it.
 */
export function applyOverrides(definition: WorkflowDefinition, overrides: Overrides): WorkflowDefinition {
  const issues: FieldIssue[] = [];
  const nodes = { ...definition.nodes };
  for (const [nodeId, params] of Object.entries(overrides)) {
    const node = definition.nodes[nodeId];
    if (!node) {
      issues.push({ field: `overrides.${nodeId}`, message: `workflow ${definition.id} has no node ${nodeId}` });
      continue;
    }
    const allowed = OVERRIDABLE_PARAMS[node.type];
    for (const param of Object.keys(params)) {
      if (!allowed.includes(param)) {
        const choices = allowed.length > 0 ? `one of ${allowed.join(', ')}` : 'none';
        issues.push({ field: `overrides.${nodeId}.${param}`, message: `not a parameter of this ${node.type} node (${choices})` });
      }
    }
    const parsed = nodeSchema.safeParse({ ...node, ...params });
    if (!parsed.success) {
      issues.push(...toFieldIssues(parsed.error, ['overrides', nodeId]));
      continue;
    }
    for (const problem of nodeProblems(parsed.data)) issues.push({ field: `overrides.${nodeId}.${problem.field}`, message: problem.message });
    nodes[nodeId] = parsed.data;
  }
  if (issues.length > 0) throw new ValidationError(issues, 'Invalid overrides');
  return { ...definition, nodes };
}

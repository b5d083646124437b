import jsonata from 'jsonata';
import { ValidationError } from '#shared/errors.ts';
import { toFieldIssues } from '#shared/field-issues.ts';
import * as z from '#shared/zod.ts';
import { nodeProblems, workflowShape, type WorkflowDefinition } from './definition-schema.ts';
import { definitionSizeProblem } from './publication-service.ts';

/**
 * Publish-time validation of a whole definition: every edge names a node, node rules hold, and every condition
 * parses as JSONata. Only the admin CLI loads this module (and the JSONata parser); the API reads definitions
 * that passed it.
 */
export const workflowDefinitionSchema = workflowShape.check(
  z.superRefine((definition, context) => {
    const known = new Set(Object.keys(definition.nodes));
    const edge = (target: string, path: (string | number)[]) => {
      if (!known.has(target)) context.addIssue({ code: 'custom', path, message: `unknown node "${target}"` });
    };
    edge(definition.start, ['start']);
    for (const [id, node] of Object.entries(definition.nodes)) {
      const at = (...rest: (string | number)[]) => ['nodes', id, ...rest];
      for (const problem of nodeProblems(node)) context.addIssue({ code: 'custom', path: at(problem.field), message: problem.message });
      switch (node.type) {
        case 'approval':
          if (typeof node.next === 'string') edge(node.next, at('next'));
          else {
            edge(node.next.approved, at('next', 'approved'));
            if (node.next.rejected) edge(node.next.rejected, at('next', 'rejected'));
          }
          break;
        case 'condition':
          node.cases.forEach((branch, i) => {
            edge(branch.next, at('cases', i, 'next'));
            const syntax = conditionSyntaxProblem(branch.if);
            if (syntax) context.addIssue({ code: 'custom', path: at('cases', i, 'if'), message: syntax });
          });
          edge(node.else, at('else'));
          break;
        case 'fail':
        case 'end':
          break;
        default:
          edge(node.next, at('next'));
      }
    }
  }),
);

function conditionSyntaxProblem(expression: string): string | undefined {
  try {
    jsonata(expression);
    return undefined;
  } catch (error) {
    return `not a valid JSONata expression: ${(error as Error).message}`;
  }
}

/** Validates one definition document; `source` (a file name) prefixes every field so errors point at the file and node. */
export function parseDefinition(document: unknown, source: string): WorkflowDefinition {
  const parsed = workflowDefinitionSchema.safeParse(document);
  if (!parsed.success) throw new ValidationError(toFieldIssues(parsed.error, [source]), `Invalid workflow definition in ${source}`);
  const tooLarge = definitionSizeProblem(parsed.data);
  if (tooLarge) throw new ValidationError([{ field: source, message: tooLarge }], `Invalid workflow definition in ${source}`);
  return parsed.data;
}

import jsonata from 'jsonata';
import { ValidationError } from '#shared/errors.ts';
import { toFieldIssues } from '#shared/field-issues.ts';
import * as z from '#shared/zod.ts';
import { nodeProblems, workflowShape, type NodeOfType, type WorkflowDefinition } from './definition-schema.ts';
import { toolUrlProblem } from '#shared/public-url.ts';
import { definitionSizeProblem } from './publication-service.ts';

/**
 * Publish-time validation of a whole definition: every edge names a node, node rules hold, and every condition
 * parses as JSONata. Only the admin CLI loads this module (and the JSONata parser); the API reads definitions
 * that passed it.
 */
export function definitionSchema(options: { allowLoopbackTools: boolean }) {
  return workflowShape.check(
  z.superRefine((definition, context) => {
    const known = new Set(Object.keys(definition.nodes));
    for (const [name, tool] of Object.entries(definition.tools)) {
      const problem = toolUrlProblem(tool.url, options.allowLoopbackTools);
      if (problem) context.addIssue({ code: 'custom', path: ['tools', name, 'url'], message: problem });
    }
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
        case 'agent':
          agentProblems(definition, node).forEach(({ path, message }) => context.addIssue({ code: 'custom', path: at(...path), message }));
          edge(node.next, at('next'));
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
}

export const workflowDefinitionSchema = definitionSchema({ allowLoopbackTools: false });

/** An agent names tools the workflow defines, hands off only to agent nodes, and its script stays within both. */
function agentProblems(definition: WorkflowDefinition, node: NodeOfType<'agent'>): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  node.tools.forEach((tool, i) => {
    if (!Object.hasOwn(definition.tools, tool)) problems.push({ path: ['tools', i], message: `unknown tool "${tool}"` });
  });
  node.handoffs.forEach((target, i) => {
    const targetNode = Object.hasOwn(definition.nodes, target) ? definition.nodes[target] : undefined;
    if (targetNode?.type !== 'agent') problems.push({ path: ['handoffs', i], message: `"${target}" is not an agent node` });
  });
  node.script.forEach((step, i) => {
    if ('tool_calls' in step) {
      step.tool_calls.forEach((call, j) => {
        if (!node.tools.includes(call.tool)) problems.push({ path: ['script', i, 'tool_calls', j, 'tool'], message: `"${call.tool}" is not one of this agent's tools` });
      });
    }
    if ('handoff' in step && !node.handoffs.includes(step.handoff)) {
      problems.push({ path: ['script', i, 'handoff'], message: `"${step.handoff}" is not one of this agent's handoffs` });
    }
  });
  return problems;
}

function conditionSyntaxProblem(expression: string): string | undefined {
  try {
    jsonata(expression);
    return undefined;
  } catch (error) {
    return `not a valid JSONata expression: ${(error as Error).message}`;
  }
}

/** Validates one definition document; `source` (a file name) prefixes every field so errors point at the file and node. */
export function parseDefinition(document: unknown, source: string, options?: { allowLoopbackTools: boolean }): WorkflowDefinition {
  const parsed = (options ? definitionSchema(options) : workflowDefinitionSchema).safeParse(document);
  if (!parsed.success) throw new ValidationError(toFieldIssues(parsed.error, [source]), `Invalid workflow definition in ${source}`);
  const tooLarge = definitionSizeProblem(parsed.data);
  if (tooLarge) throw new ValidationError([{ field: source, message: tooLarge }], `Invalid workflow definition in ${source}`);
  return parsed.data;
}

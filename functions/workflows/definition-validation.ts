import jsonata from 'jsonata';
import { ValidationError, type FieldIssue } from '#shared/errors.ts';
import { toFieldIssues } from '#shared/http/field-issues.ts';
import * as z from '#shared/zod.ts';
import { CONVERSE_TOOL_NAME_MAX, MAX_SECRETS_PER_TOOL, SECRET_NAME_PATTERN } from '#shared/limits.ts';
import { HANDOFF_TOOL_PREFIX, secretReferencesIn } from './tool-references.ts';
import {
  modelIssues,
  nodeProblems,
  workflowShape,
  type NodeOfType,
  type ToolDefinition,
  type WorkflowDefinition,
} from './definition-schema.ts';

const SECRET_REFERENCE = /\{\{\s*secret\./;
const SECRET_OUTSIDE_TEMPLATES =
  'uses {{secret.*}}; secrets are read only in tool URLs and headers, so they never reach a model, an output or an event';
import { toolUrlProblem } from '#shared/network/public-url.ts';
import { definitionSizeProblem } from './publication-service.ts';

/**
 * Publish-time validation of a whole definition: every edge names a node, node rules hold, and every condition
 * parses as JSONata, and every model is one Bedrock serves at `now`. Only the admin CLI loads this module (and the
 * JSONata parser); the API reads definitions that passed it.
 */
export function definitionSchema(options: DefinitionOptions) {
  return workflowShape.check(
    z.superRefine((definition, context) => {
      const known = new Set(Object.keys(definition.nodes));
      for (const [name, tool] of Object.entries(definition.tools)) {
        const problem = toolUrlProblem(tool.url, options.allowLoopbackTools);
        if (problem) context.addIssue({ code: 'custom', path: ['tools', name, 'url'], message: problem });
        for (const { path, message } of toolSecretProblems(tool))
          context.addIssue({ code: 'custom', path: ['tools', name, ...path], message });
        for (const path of secretReferencePaths({
          description: tool.description,
          ...(tool.type === 'http' ? { parameters: tool.parameters } : {}),
        })) {
          context.addIssue({ code: 'custom', path: ['tools', name, ...path], message: SECRET_OUTSIDE_TEMPLATES });
        }
      }
      const edge = (target: string, path: (string | number)[]) => {
        if (!known.has(target)) context.addIssue({ code: 'custom', path, message: `unknown node "${target}"` });
      };
      edge(definition.start, ['start']);
      for (const [id, node] of Object.entries(definition.nodes)) {
        const at = (...rest: (string | number)[]) => ['nodes', id, ...rest];
        for (const problem of nodeProblems(node)) context.addIssue({ code: 'custom', path: at(problem.field), message: problem.message });
        for (const message of modelIssues(node, options.now).refuse) context.addIssue({ code: 'custom', path: at('model_id'), message });
        if (SECRET_REFERENCE.test(JSON.stringify(node))) {
          context.addIssue({ code: 'custom', path: at(), message: SECRET_OUTSIDE_TEMPLATES });
        }
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
            agentProblems(definition, node).forEach(({ path, message }) =>
              context.addIssue({ code: 'custom', path: at(...path), message }),
            );
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

export interface DefinitionOptions {
  allowLoopbackTools: boolean;
  /** When publishing: decides which models have reached their end of life. */
  now: number;
}

/**
 * What publishing a valid definition should still tell its author: the nodes naming a Legacy model, with the day
 * Bedrock stops answering (`<source>.nodes.<id>.model_id`).
 */
export function definitionWarnings(definition: WorkflowDefinition, source: string, now: number): FieldIssue[] {
  return Object.entries(definition.nodes).flatMap(([id, node]) =>
    modelIssues(node, now).warn.map((message) => ({ field: `${source}.nodes.${id}.model_id`, message })),
  );
}

/**
 * An agent names tools the workflow defines, hands off only to agent nodes, and its script stays within both. The
 * names its model sees (HTTP entries, and each MCP entry's allow-list) are unique, and none looks like a hand-off.
 */
function agentProblems(definition: WorkflowDefinition, node: NodeOfType<'agent'>): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  const visible = new Map<string, string>();
  node.tools.forEach((entryName, i) => {
    const entry = Object.hasOwn(definition.tools, entryName) ? definition.tools[entryName] : undefined;
    if (!entry) return void problems.push({ path: ['tools', i], message: `unknown tool "${entryName}"` });
    for (const name of entry.type === 'mcp' ? entry.tools : [entryName]) {
      const earlier = visible.get(name);
      if (earlier !== undefined)
        problems.push({
          path: ['tools', i],
          message: `tool name "${name}" is also given by "${earlier}"; the model could not tell them apart`,
        });
      else if (name.startsWith(HANDOFF_TOOL_PREFIX))
        problems.push({ path: ['tools', i], message: `tool name "${name}" starts with ${HANDOFF_TOOL_PREFIX}, which names hand-offs` });
      visible.set(name, entryName);
    }
  });
  node.handoffs.forEach((target, i) => {
    const targetNode = Object.hasOwn(definition.nodes, target) ? definition.nodes[target] : undefined;
    if (targetNode?.type !== 'agent') problems.push({ path: ['handoffs', i], message: `"${target}" is not an agent node` });
    const toolName = `${HANDOFF_TOOL_PREFIX}${target}`;
    if (node.provider === 'bedrock' && toolName.length > CONVERSE_TOOL_NAME_MAX) {
      problems.push({
        path: ['handoffs', i],
        message:
          `the model sees this hand-off as the tool "${toolName}" (${toolName.length} characters), and Bedrock allows at most ` +
          `${CONVERSE_TOOL_NAME_MAX}: name the node with at most ${CONVERSE_TOOL_NAME_MAX - HANDOFF_TOOL_PREFIX.length} characters`,
      });
    }
  });
  node.script.forEach((step, i) => {
    if ('tool_calls' in step) {
      step.tool_calls.forEach((call, j) => {
        if (!visible.has(call.tool))
          problems.push({ path: ['script', i, 'tool_calls', j, 'tool'], message: `"${call.tool}" is not one of this agent's tools` });
      });
    }
    if ('handoff' in step && !node.handoffs.includes(step.handoff)) {
      problems.push({ path: ['script', i, 'handoff'], message: `"${step.handoff}" is not one of this agent's handoffs` });
    }
  });
  return problems;
}

/** `{{secret.NAME}}` names an SSM parameter segment; a tool reads at most MAX_SECRETS_PER_TOOL of them per call. */
function toolSecretProblems(tool: ToolDefinition): { path: (string | number)[]; message: string }[] {
  const names = secretReferencesIn([tool.url, ...Object.values(tool.headers)]);
  const problems = names
    .filter((name) => !SECRET_NAME_PATTERN.test(name))
    .map((name) => ({ path: [] as (string | number)[], message: `secret name "${name}" must be 1-128 letters, digits, _ . or -` }));
  if (names.length > MAX_SECRETS_PER_TOOL)
    problems.push({ path: [], message: `uses ${names.length} secrets; a tool uses at most ${MAX_SECRETS_PER_TOOL}` });
  return problems;
}

/** Where in a JSON value (a key or a string) `{{secret.` is written: a tool's description and schema go to the model as they are. */
function secretReferencePaths(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value === 'string') return SECRET_REFERENCE.test(value) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((item, i) => secretReferencePaths(item, [...path, i]));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => [
    ...(SECRET_REFERENCE.test(key) ? [[...path, key]] : []),
    ...secretReferencePaths(item, [...path, key]),
  ]);
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
export function parseDefinition(document: unknown, source: string, options: DefinitionOptions): WorkflowDefinition {
  const parsed = definitionSchema(options).safeParse(document);
  if (!parsed.success) throw new ValidationError(toFieldIssues(parsed.error, [source]), `Invalid workflow definition in ${source}`);
  const tooLarge = definitionSizeProblem(parsed.data);
  if (tooLarge) throw new ValidationError([{ field: source, message: tooLarge }], `Invalid workflow definition in ${source}`);
  return parsed.data;
}

import { missingModelProblem, modelProblem } from '#shared/bedrock-catalog.ts';
import { isJsonObject } from '#shared/json-object.ts';
import { headerNameProblem, headerValueProblem } from '#shared/network/http-header-rule.ts';
import {
  DEFAULT_AGENT_TURNS,
  DEFAULT_TOOL_TIMEOUT_MS,
  MAX_AGENT_TURNS,
  MAX_IMAGE_SIDE,
  MAX_MCP_TOOLS_PER_SERVER,
  MAX_SCRIPTED_IMAGE_SIDE,
  MAX_SCRIPTED_TOOL_CALLS_PER_TURN,
  MIN_IMAGE_SIDE,
  NOVA_CANVAS_MAX_ASPECT,
  NOVA_CANVAS_MAX_PIXELS,
  NOVA_CANVAS_MAX_PROMPT_CHARS,
  NOVA_CANVAS_MAX_SIDE,
  NOVA_CANVAS_MIN_SIDE,
  NOVA_CANVAS_SIDE_STEP,
  MAX_NODES_PER_WORKFLOW,
  MAX_TOKEN_DELAY_MS,
  MAX_TOOL_TIMEOUT_MS,
  MAX_WAIT_SECONDS,
  WORKFLOW_ID_PATTERN,
} from '#shared/limits.ts';
import * as z from '#shared/zod.ts';
import { chosenUnion } from './chosen-union.ts';
import { memoryKeyProblem } from './memory-key.ts';

/**
 * The workflow definition language. Definitions are strict (an unknown field is a typo, not an extension),
 * and every error names the node and the field, so a publisher can fix the file without guessing.
 */
const nodeId = z.string().check(z.regex(WORKFLOW_ID_PATTERN, 'must be 1-64 letters, digits, _ or -'));
const template = z.string().check(z.maxLength(100_000));

/**
 * zod's record skips a `__proto__` key without a word (JSON.parse makes it an ordinary key); a definition
 * naming one is refused instead of published without it. `keyProblem` checks every key with its own message
 * (a record's key schema would only say "Invalid key in record").
 */
function ownRecord<Schema extends z.ZodMiniType>(record: Schema, keyProblem?: (key: string) => string | undefined) {
  const keys = z.unknown().check(
    z.superRefine((value, context) => {
      if (!isJsonObject(value)) return; // the record reports it
      for (const key of Object.keys(value)) {
        const problem = key === '__proto__' ? 'is a reserved name' : keyProblem?.(key);
        if (problem) context.addIssue({ code: 'custom', path: [key], message: problem });
      }
    }),
  );
  return z.pipe(keys, record);
}

/**
 * Any JSON value (definitions come from JSON.parse), kept as it is. A `__proto__` key anywhere in it is
 * refused with its path, as in records.
 */
const jsonValue = z.unknown().check(
  z.superRefine((value, context) => {
    if (value === undefined) context.addIssue({ code: 'custom', message: 'is required' });
    const visit = (node: unknown, path: (string | number)[]) => {
      if (Array.isArray(node)) node.forEach((item, i) => visit(item, [...path, i]));
      else if (isJsonObject(node)) {
        for (const [key, item] of Object.entries(node)) {
          if (key === '__proto__') context.addIssue({ code: 'custom', path: [...path, key], message: 'is a reserved name' });
          else visit(item, [...path, key]);
        }
      }
    };
    visit(value, []);
  }),
);

const llmNode = z.strictObject({
  type: z.literal('llm'),
  provider: z.enum(['scripted', 'bedrock']),
  /** scripted: the reply template, emitted as word tokens. */
  reply: z.optional(template),
  token_delay_ms: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(MAX_TOKEN_DELAY_MS))),
  /** bedrock: the model or inference profile, and the prompts (templates). */
  model_id: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
  system: z.optional(template),
  prompt: z.optional(template),
  max_tokens: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(64_000))),
  temperature: z.optional(z.number().check(z.minimum(0), z.maximum(1))),
  next: nodeId,
});

const approvalBranches = z.strictObject({ approved: nodeId, rejected: z.optional(nodeId) });
const approvalNode = z.strictObject({
  type: z.literal('approval'),
  message: template,
  next: chosenUnion(
    [nodeId, approvalBranches],
    (value) => (typeof value === 'string' ? nodeId : isJsonObject(value) ? approvalBranches : undefined),
    'a node id, or an object with approved (and optionally rejected) node ids',
  ),
});

const memoryNode = z.strictObject({
  type: z.literal('memory'),
  set: ownRecord(z.record(z.string(), template), memoryKeyProblem),
  next: nodeId,
});

const conditionNode = z.strictObject({
  type: z.literal('condition'),
  cases: z
    .array(z.strictObject({ if: z.string().check(z.minLength(1), z.maxLength(10_000)), next: nodeId }))
    .check(z.minLength(1), z.maxLength(50)),
  else: nodeId,
});

const waitNode = z.strictObject({
  type: z.literal('wait'),
  seconds: z.number().check(z.int(), z.minimum(1), z.maximum(MAX_WAIT_SECONDS)),
  next: nodeId,
});

const failNode = z.strictObject({ type: z.literal('fail'), error: template });

/** A scripted model turn: a reply (the agent's output), tool calls, or a hand-off to another agent node; its one key says which. */
const scriptSteps = {
  reply: z.strictObject({ reply: template }),
  tool_calls: z.strictObject({
    tool_calls: z.array(z.strictObject({ tool: nodeId, arguments: z._default(ownRecord(z.record(z.string(), jsonValue)), {}) })).check(
      z.minLength(1),
      z.maxLength(MAX_SCRIPTED_TOOL_CALLS_PER_TURN, {
        error: (issue) => `at most ${MAX_SCRIPTED_TOOL_CALLS_PER_TURN} tool calls per turn, got ${(issue.input as unknown[]).length}`,
      }),
    ),
  }),
  handoff: z.strictObject({ handoff: nodeId }),
};
const scriptStep = chosenUnion(
  [scriptSteps.reply, scriptSteps.tool_calls, scriptSteps.handoff],
  (value) => {
    const held = isJsonObject(value)
      ? (Object.keys(scriptSteps) as (keyof typeof scriptSteps)[]).filter((key) => Object.hasOwn(value, key))
      : [];
    return held.length === 1 ? scriptSteps[held[0]!] : undefined;
  },
  'a turn is an object with exactly one of reply, tool_calls or handoff',
);

/**
 * An agent: a loop of model turns (at most `max_turns`), each a reply, tool calls (run, results given back), or a
 * hand-off to one of `handoffs`. The `scripted` provider plays `script`, one step per turn; `bedrock` asks the
 * model (ConverseStream with the agent's tools, and a `transfer_to_<node>` tool per hand-off).
 */
const agentNode = z.strictObject({
  type: z.literal('agent'),
  provider: z.enum(['scripted', 'bedrock']),
  instructions: z.optional(template),
  /** The first user message (bedrock); the execution's `input.message` unless given. */
  prompt: z.optional(template),
  tools: z._default(z.array(nodeId).check(z.maxLength(32)), []),
  handoffs: z._default(z.array(nodeId).check(z.maxLength(16)), []),
  max_turns: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_AGENT_TURNS)), DEFAULT_AGENT_TURNS),
  script: z._default(z.array(scriptStep).check(z.maxLength(MAX_AGENT_TURNS)), []),
  token_delay_ms: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(MAX_TOKEN_DELAY_MS))),
  model_id: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
  max_tokens: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(64_000))),
  temperature: z.optional(z.number().check(z.minimum(0), z.maximum(1))),
  next: nodeId,
});

/** A generated image: stored under the execution in S3, its node output carries a presigned URL. */
const imageNode = z.strictObject({
  type: z.literal('image'),
  provider: z.enum(['scripted', 'bedrock']),
  prompt: template,
  width: z.number().check(z.int(), z.minimum(MIN_IMAGE_SIDE), z.maximum(MAX_IMAGE_SIDE)),
  height: z.number().check(z.int(), z.minimum(MIN_IMAGE_SIDE), z.maximum(MAX_IMAGE_SIDE)),
  /** bedrock: the image model, required (publish refuses it when the catalog serves no image model). */
  model_id: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
  seed: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(858_993_459))),
  /** Nova Canvas's `imageGenerationConfig.quality` (default standard), metered with each image; premium costs more per Canvas image. */
  quality: z.optional(z.enum(['standard', 'premium'])),
  next: nodeId,
});

/** A tool's headers, sent as written with their placeholders filled: one the request could never carry is refused here. */
const toolHeaders = z._default(
  ownRecord(
    z.record(
      z.string(),
      template.check(
        z.superRefine((value, context) => {
          const problem = headerValueProblem(value);
          if (problem) context.addIssue({ code: 'custom', message: `${problem}: every call of this tool would fail` });
        }),
      ),
    ),
    headerNameProblem,
  ),
  {},
);

/** An HTTP tool: `{{args.x}}` in the URL are URL-encoded; `parameters` is the JSON Schema of the arguments. */
const httpToolSchema = z.strictObject({
  type: z.literal('http'),
  description: z._default(z.string().check(z.maxLength(2000)), ''),
  method: z._default(z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']), 'GET'),
  url: z.string().check(z.minLength(1), z.maxLength(2048)),
  headers: toolHeaders,
  parameters: z._default(jsonValue, { type: 'object' }),
  timeout_ms: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_TOOL_TIMEOUT_MS)), DEFAULT_TOOL_TIMEOUT_MS),
});
export type HttpTool = z.infer<typeof httpToolSchema>;

/** An MCP server (Streamable HTTP); the agent sees only the server tools its allow-list names, with their listed schemas. */
const mcpToolSchema = z.strictObject({
  type: z.literal('mcp'),
  description: z._default(z.string().check(z.maxLength(2000)), ''),
  url: z.string().check(z.minLength(1), z.maxLength(2048)),
  headers: toolHeaders,
  tools: z.array(nodeId).check(z.minLength(1), z.maxLength(MAX_MCP_TOOLS_PER_SERVER)),
  timeout_ms: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_TOOL_TIMEOUT_MS)), DEFAULT_TOOL_TIMEOUT_MS),
});
export type McpTool = z.infer<typeof mcpToolSchema>;

const toolSchema = z.discriminatedUnion('type', [httpToolSchema, mcpToolSchema]);
export type ToolDefinition = z.infer<typeof toolSchema>;

const endNode = z.strictObject({ type: z.literal('end'), output: jsonValue });

export const nodeSchema = z.discriminatedUnion('type', [
  llmNode,
  agentNode,
  imageNode,
  approvalNode,
  memoryNode,
  conditionNode,
  waitNode,
  failNode,
  endNode,
]);

export type WorkflowNode = z.infer<typeof nodeSchema>;
export type NodeOfType<T extends WorkflowNode['type']> = Extract<WorkflowNode, { type: T }>;

/** What `overrides` may replace per node type: parameters, never the graph's edges. */
export const OVERRIDABLE_PARAMS: Record<WorkflowNode['type'], readonly string[]> = {
  llm: ['provider', 'reply', 'token_delay_ms', 'model_id', 'system', 'prompt', 'max_tokens', 'temperature'],
  agent: ['instructions', 'prompt', 'max_turns', 'script', 'token_delay_ms', 'model_id', 'max_tokens', 'temperature'],
  image: ['prompt', 'width', 'height', 'seed', 'quality'],
  approval: ['message'],
  memory: ['set'],
  condition: [],
  wait: ['seconds'],
  fail: ['error'],
  end: ['output'],
};

/** The definition's fields; the rules across nodes (edges, condition syntax) are checked at publish (definition-validation.ts). */
export const workflowShape = z.strictObject({
  id: nodeId,
  name: z.string().check(z.minLength(1), z.maxLength(200)),
  description: z._default(z.string().check(z.maxLength(2000)), ''),
  start: nodeId,
  tools: z._default(ownRecord(z.record(nodeId, toolSchema)), {}),
  nodes: ownRecord(
    z.record(nodeId, nodeSchema).check(
      z.refine((nodes) => Object.keys(nodes).length <= MAX_NODES_PER_WORKFLOW, {
        message: `at most ${MAX_NODES_PER_WORKFLOW} nodes`,
      }),
    ),
  ),
});

export type WorkflowDefinition = z.infer<typeof workflowShape>;

/** Rules that depend on more than one field of a node; also checked after overrides. */
export function nodeProblems(node: WorkflowNode): { field: string; message: string }[] {
  switch (node.type) {
    case 'llm':
      if (node.provider === 'scripted' && node.reply === undefined) return [{ field: 'reply', message: 'required for provider scripted' }];
      if (node.provider === 'bedrock' && node.model_id === undefined)
        return [{ field: 'model_id', message: 'required for provider bedrock' }];
      return [];
    case 'agent':
      if (node.provider === 'scripted' && node.script.length === 0) return [{ field: 'script', message: 'required for provider scripted' }];
      if (node.provider === 'bedrock' && node.model_id === undefined)
        return [{ field: 'model_id', message: 'required for provider bedrock' }];
      return [];
    case 'image':
      return imageSizeProblems(node);
    default:
      return [];
  }
}

/**
 * A bedrock node's model at `now`: refusals (unknown to the catalog, of the other kind, served only through a
 * profile, past its end of life; an image node naming none) and warnings (Legacy, with its end date), each on
 * `model_id`. An image node without a model is refused here, where the catalog's state is known, and not defaulted.
 */
export function modelIssues(node: WorkflowNode, now: number): { refuse: string[]; warn: string[] } {
  const named =
    (node.type === 'llm' || node.type === 'agent' || node.type === 'image') && node.provider === 'bedrock' ? node.model_id : undefined;
  if (named === undefined && node.type === 'image' && node.provider === 'bedrock')
    return { refuse: [missingModelProblem('image', now)], warn: [] };
  if (named === undefined) return { refuse: [], warn: [] };
  const { refuse, warn } = modelProblem(named, node.type === 'image' ? 'image' : 'text', now);
  return { refuse: refuse ? [refuse] : [], warn: warn ? [warn] : [] };
}

/** The scripted provider draws small images; Nova Canvas has its own documented size rules. */
function imageSizeProblems(node: NodeOfType<'image'>): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  if (node.provider === 'scripted') {
    for (const side of ['width', 'height'] as const) {
      if (node[side] > MAX_SCRIPTED_IMAGE_SIDE)
        problems.push({ field: side, message: `at most ${MAX_SCRIPTED_IMAGE_SIDE} for provider scripted` });
    }
    return problems;
  }
  for (const side of ['width', 'height'] as const) {
    const value = node[side];
    if (value < NOVA_CANVAS_MIN_SIDE || value % NOVA_CANVAS_SIDE_STEP !== 0) {
      problems.push({
        field: side,
        message: `must be ${NOVA_CANVAS_MIN_SIDE}-${NOVA_CANVAS_MAX_SIDE} and divisible by ${NOVA_CANVAS_SIDE_STEP} for provider bedrock`,
      });
    }
  }
  if (node.width * node.height > NOVA_CANVAS_MAX_PIXELS)
    problems.push({ field: 'width', message: `width × height must be at most ${NOVA_CANVAS_MAX_PIXELS} pixels for provider bedrock` });
  const aspect = Math.max(node.width, node.height) / Math.min(node.width, node.height);
  if (aspect > NOVA_CANVAS_MAX_ASPECT)
    problems.push({
      field: 'height',
      message: `the aspect ratio must be within 1:${NOVA_CANVAS_MAX_ASPECT} and ${NOVA_CANVAS_MAX_ASPECT}:1 for provider bedrock`,
    });
  if (!/\{\{/.test(node.prompt) && node.prompt.length > NOVA_CANVAS_MAX_PROMPT_CHARS) {
    problems.push({ field: 'prompt', message: `at most ${NOVA_CANVAS_MAX_PROMPT_CHARS} characters for provider bedrock` });
  }
  return problems;
}

/** A definition as the publications table stores it (compact JSON), which is what counts against the item limit. */
export function storedDefinitionJson(definition: WorkflowDefinition): string {
  return JSON.stringify(definition);
}

import { CONVERSE_TOOL_NAME_PATTERN as TOOL_NAME } from '#shared/limits.ts';

type Json = Record<string, unknown>;

const BLOCK_KINDS = ['text', 'image', 'document', 'video', 'toolUse', 'toolResult', 'guardContent', 'reasoningContent', 'cachePoint'];

/**
 * What the Converse API refuses with a ValidationException, as far as the product's requests can meet it: an empty
 * conversation, one not starting with the user or not alternating roles, unknown content blocks, tool blocks without
 * a `toolConfig`, a tool use of the assistant not answered by a result with its id in the next user message (or a
 * result answering nothing), tool names outside `[a-zA-Z0-9_-]{1,64}` or repeated, a tool without a JSON object
 * schema, a `maxTokens` below 1, and system blocks that are not text.
 */
export function conversationProblem(body: Json): string | undefined {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
  const toolConfig = body.toolConfig as { tools?: { toolSpec?: { name?: unknown; inputSchema?: { json?: unknown } } }[] } | undefined;
  let usesTools = false;
  for (const [i, message] of (messages as { role?: unknown; content?: unknown }[]).entries()) {
    if (i === 0 && message.role !== 'user')
      return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
    if (message.role !== 'user' && message.role !== 'assistant') return `messages.${i}.role: must be user or assistant`;
    if (i > 0 && message.role === (messages[i - 1] as { role?: unknown }).role)
      return (
        'A conversation must alternate between user and assistant roles. ' +
        'Make sure the conversation alternates between user and assistant roles and try again.'
      );
    if (!Array.isArray(message.content) || message.content.length === 0)
      return `messages.${i}.content: must contain at least one content block`;
    for (const block of message.content as Json[]) {
      const kinds = Object.keys(block).filter((key) => block[key] !== undefined);
      if (kinds.length !== 1 || !BLOCK_KINDS.includes(kinds[0]!))
        return `messages.${i}.content: each content block must be exactly one of ${BLOCK_KINDS.join(', ')}`;
      if (kinds[0] === 'toolUse' || kinds[0] === 'toolResult') usesTools = true;
    }
    const pairing = toolPairingProblem(messages as { role: string; content: Json[] }[], i);
    if (pairing) return pairing;
  }
  if (usesTools && !toolConfig) return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.';
  if (toolConfig) {
    const names = new Set<string>();
    if (!Array.isArray(toolConfig.tools) || toolConfig.tools.length === 0) return 'toolConfig.tools: must contain at least one tool';
    for (const tool of toolConfig.tools) {
      const name = tool.toolSpec?.name;
      if (typeof name !== 'string' || !TOOL_NAME.test(name))
        return `toolConfig.tools.toolSpec.name: ${JSON.stringify(name)} must match [a-zA-Z0-9_-]{1,64}`;
      if (names.has(name)) return `The toolConfig field contains duplicate tool names: ${name}`;
      names.add(name);
      const schema = tool.toolSpec?.inputSchema?.json as Json | undefined;
      if (!schema || typeof schema !== 'object' || schema.type !== 'object')
        return `The input schema of tool ${name} must be a JSON object schema`;
    }
  }
  const maxTokens = (body.inferenceConfig as { maxTokens?: unknown } | undefined)?.maxTokens;
  if (maxTokens !== undefined && (typeof maxTokens !== 'number' || maxTokens < 1))
    return (
      "1 validation error detected: Value at 'inferenceConfig.maxTokens' failed to satisfy constraint: " +
      'Member must have value greater than or equal to 1'
    );
  const system = body.system;
  if (
    system !== undefined &&
    (!Array.isArray(system) || system.some((block: Json) => typeof block.text !== 'string' && block.cachePoint === undefined))
  )
    return 'system: each block must be text';
  return undefined;
}

/** A user message after an assistant's tool uses answers each of them, by id, and nothing else. */
function toolPairingProblem(messages: { role: string; content: Json[] }[], i: number): string | undefined {
  const message = messages[i]!;
  if (message.role !== 'user') return undefined;
  const asked =
    i > 0 ? messages[i - 1]!.content.flatMap((block) => (block.toolUse ? [(block.toolUse as { toolUseId: string }).toolUseId] : [])) : [];
  const answered = message.content.flatMap((block) => (block.toolResult ? [(block.toolResult as { toolUseId: string }).toolUseId] : []));
  const unanswered = asked.filter((id) => !answered.includes(id));
  if (unanswered.length > 0) return `Expected toolResult blocks at messages.${i}.content for the following Ids: ${unanswered.join(', ')}`;
  const stray = answered.filter((id) => !asked.includes(id));
  if (stray.length > 0) return `messages.${i}.content: toolResult ${stray.join(', ')} answers no toolUse of the previous assistant message`;
  return undefined;
}

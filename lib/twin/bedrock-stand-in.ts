import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { lookUpModel } from '#shared/bedrock-catalog.ts';
import { localApplicationProfile, modelIdOfLocalArn } from './bedrock-profiles.ts';
import { conversationProblem } from './bedrock-converse-rules.ts';

interface ConverseTurn {
  /** Text deltas of one text block, in order. */
  text?: string[];
  /** Each streamed as a block start, its input JSON in two or more deltas, and a block stop. */
  toolUses?: { toolUseId?: string; name: string; input: unknown }[];
  /** Default: `tool_use` with tool uses, else `end_turn`. */
  stopReason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'content_filtered' | 'guardrail_intervened';
  /** Default: estimated, about 4 characters a token. Cache tokens (Bedrock's prompt cache) are reported as given. */
  usage?: { inputTokens: number; outputTokens: number; cacheReadInputTokens?: number; cacheWriteInputTokens?: number };
  /** An HTTP error instead of a stream, e.g. `{status: 429, type: 'ThrottlingException', message}`. */
  httpError?: { status: number; type: string; message: string };
  /** An exception message in the stream after its first `afterEvents` events. */
  streamError?: { type: string; message: string; afterEvents: number };
}

export interface BedrockStandIn {
  endpoint: string;
  /** Appended to the model's queue; each ConverseStream call to it takes the next turn. */
  scriptConverse(modelId: string, turns: ConverseTurn[]): void;
  /**
   * Every request the stand-in answered past its model checks, parsed, in order: `modelId` is the model the call
   * reached (an application inference profile's ARN resolved to the model id it copies), `invokedAs` the identifier
   * the call named.
   */
  requests: { operation: 'ConverseStream'; modelId: string; invokedAs: string; body: unknown }[];
  reset(): void;
  close(): Promise<void>;
}

const CHARS_PER_TOKEN = 4;
const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => new Uint8Array(Buffer.from(text, 'utf8')),
);
const estimateTokens = (text: string) => Math.max(1, Math.ceil(text.length / CHARS_PER_TOKEN));

type Json = Record<string, unknown>;

/**
 * The twin's Amazon Bedrock Runtime: ConverseStream answered in the AWS event-stream encoding (so the real SDK and
 * the product's stream parsing run). Tests script each model's turns; an unscripted call answers
 * `(local Bedrock stand-in) <the last user text>`, so `npm start` works without a model. Requests the service would
 * refuse are refused (bedrock-converse-rules.ts), and `inferenceConfig.maxTokens` cuts the text and stops with
 * `max_tokens` (a token counted as 4 characters). InvokeModel answers with the model refusals only: the catalog's
 * one image model, Nova Canvas, is past its end of life (ResourceNotFoundException), and a text model is refused as
 * Bedrock refuses an image request to it; the stand-in draws no images.
 * A model is named by its id, its foundation model or cross-region profile ARN, or the ARN of an application inference
 * profile the twin created (bedrock-profiles.ts), which answers as the model it copies; any other ARN is an invalid
 * identifier. The IAM front door before it checks signatures and which models and profiles the caller may invoke.
 */
export async function startBedrockStandIn(options: { port?: number; host?: string; now?: () => number } = {}): Promise<BedrockStandIn> {
  const now = options.now ?? Date.now;
  const queues = new Map<string, ConverseTurn[]>();
  const requests: BedrockStandIn['requests'] = [];

  const server = createServer((request, response) => void serve(request, response).catch(() => response.destroy()));
  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const match = /^\/model\/([^/?]+)\/(converse-stream|invoke)$/.exec(request.url ?? '');
    if (request.method !== 'POST' || !match)
      return refuse(response, 404, 'UnknownOperationException', 'The stand-in answers ConverseStream and InvokeModel only');
    const invokedAs = decodeURIComponent(match[1]!);
    const modelId = modelOf(invokedAs);
    if (modelId === undefined) return refuse(response, 400, 'ValidationException', INVALID_MODEL_IDENTIFIER);
    const refusal = modelRefusal(modelId, match[2] === 'invoke' ? 'image' : 'text', now());
    if (refusal) return refuse(response, refusal.status, refusal.type, refusal.message);
    let body: Json;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
    } catch {
      return refuse(response, 400, 'ValidationException', 'Malformed input request, please reformat your input and try again.');
    }
    // Only an image model before its end of life gets here (Nova Canvas on a clock set before 2026-09-30): the
    // stand-in keeps no image request rules, so it draws nothing.
    if (match[2] === 'invoke')
      return refuse(response, 400, 'ValidationException', `The stand-in has no request rules for InvokeModel on ${modelId}`);
    requests.push({ operation: 'ConverseStream', modelId, invokedAs, body });
    const problem = conversationProblem(body);
    if (problem) return refuse(response, 400, 'ValidationException', problem);
    const turn = queues.get(modelId)?.shift() ?? defaultTurn(body);
    if (turn.httpError) return refuse(response, turn.httpError.status, turn.httpError.type, turn.httpError.message);
    streamTurn(response, cutToMaxTokens(turn, body), body);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  return {
    endpoint: `http://${options.host ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}`,
    scriptConverse(modelId, turns) {
      queues.set(modelId, [...(queues.get(modelId) ?? []), ...turns]);
    },
    requests,
    reset() {
      queues.clear();
      requests.length = 0;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const INVALID_MODEL_IDENTIFIER = 'The provided model identifier is invalid.';

/**
 * The model id a call's identifier names: the id itself; a foundation model's or a cross-region inference profile's
 * ARN (in the twin's region and account); an application inference profile's ARN only if the twin created it (lib/twin/
 * bedrock-profiles.ts), as the model it copies. Any other ARN (another account's or region's, a profile that does not
 * exist, a resource type Bedrock does not invoke) is undefined, which Bedrock answers as an invalid identifier.
 */
function modelOf(identifier: string): string | undefined {
  if (!identifier.startsWith('arn:')) return identifier;
  if (/^arn:[^:]*:bedrock:[^:]*:[^:]*:application-inference-profile\//.test(identifier)) return localApplicationProfile(identifier)?.model;
  return modelIdOfLocalArn(identifier);
}

/**
 * What Bedrock answers for a model it will not serve: an id it does not know (or a model past its end of life that
 * it no longer lists), a model that only an inference profile serves on demand, and an operation the model lacks.
 */
function modelRefusal(modelId: string, kind: 'text' | 'image', at: number): { status: number; type: string; message: string } | undefined {
  const found = lookUpModel(modelId, at);
  if (!found) return { status: 400, type: 'ValidationException', message: INVALID_MODEL_IDENTIFIER };
  if (found.state === 'ended') {
    return {
      status: 404,
      type: 'ResourceNotFoundException',
      message: 'This model version has reached the end of its life. Please refer to the AWS documentation for more details.',
    };
  }
  if (!found.viaProfile && !found.model.onDemand) {
    return {
      status: 400,
      type: 'ValidationException',
      message:
        `Invocation of model ID ${modelId} with on-demand throughput isn\u2019t supported. Retry your request with the ID or ARN of an ` +
        `inference profile that contains this model.`,
    };
  }
  if (found.model.kind !== kind) {
    return {
      status: 400,
      type: 'ValidationException',
      message: "This action doesn't support the model that you provided. Try again with a supported text or chat model.",
    };
  }
  return undefined;
}

function refuse(response: ServerResponse, status: number, type: string, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type }).end(JSON.stringify({ message }));
}

function lastUserText(body: Json): string {
  const messages = body.messages as { role: string; content: Json[] }[];
  const last = [...messages].reverse().find((message) => message.role === 'user');
  return (last?.content ?? []).flatMap((block) => (typeof block.text === 'string' ? [block.text] : [])).join(' ');
}

function defaultTurn(body: Json): ConverseTurn {
  const text = `(local Bedrock stand-in) ${lastUserText(body)}`;
  return { text: text.match(/\S+\s*|\s+/g) ?? [text] };
}

/** The service stops generating at `maxTokens`: the text is cut there and the stop reason says so. */
function cutToMaxTokens(turn: ConverseTurn, body: Json): ConverseTurn {
  const maxTokens = (body.inferenceConfig as { maxTokens?: number } | undefined)?.maxTokens;
  if (maxTokens === undefined || !turn.text) return turn;
  let budget = maxTokens * CHARS_PER_TOKEN;
  const text: string[] = [];
  for (const delta of turn.text) {
    if (budget <= 0) break;
    text.push(delta.slice(0, budget));
    budget -= delta.length;
  }
  if (budget >= 0) return turn;
  return { ...turn, text, toolUses: undefined, stopReason: 'max_tokens' };
}

function streamTurn(response: ServerResponse, turn: ConverseTurn, body: Json): void {
  const events: [string, Json][] = [['messageStart', { role: 'assistant' }]];
  let index = 0;
  if (turn.text?.length) {
    for (const text of turn.text) events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { text } }]);
    events.push(['contentBlockStop', { contentBlockIndex: index }]);
    index += 1;
  }
  for (const [n, toolUse] of (turn.toolUses ?? []).entries()) {
    const toolUseId = toolUse.toolUseId ?? `tooluse_${n}_${Date.now().toString(36)}`;
    events.push(['contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId, name: toolUse.name } } }]);
    const input = JSON.stringify(toolUse.input ?? {});
    const half = Math.ceil(input.length / 2);
    for (const piece of [input.slice(0, half), input.slice(half)])
      events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: piece } } }]);
    events.push(['contentBlockStop', { contentBlockIndex: index }]);
    index += 1;
  }
  const outputText = (turn.text ?? []).join('') + (turn.toolUses ?? []).map((toolUse) => JSON.stringify(toolUse.input ?? {})).join('');
  const usage = turn.usage ?? { inputTokens: estimateTokens(JSON.stringify(body.messages)), outputTokens: estimateTokens(outputText) };
  events.push(['messageStop', { stopReason: turn.stopReason ?? (turn.toolUses?.length ? 'tool_use' : 'end_turn') }]);
  events.push(['metadata', { usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens }, metrics: { latencyMs: 1 } }]);

  response.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': `local-${Date.now()}` });
  for (const [i, [type, payload]] of events.entries()) {
    if (turn.streamError && i === turn.streamError.afterEvents) {
      response.write(
        message(
          { ':message-type': 'exception', ':exception-type': turn.streamError.type, ':content-type': 'application/json' },
          { message: turn.streamError.message },
        ),
      );
      return void response.end();
    }
    response.write(
      message({ ':message-type': 'event', ':event-type': type, ':content-type': 'application/json' }, { ...payload, p: 'abcdefghijkl' }),
    );
  }
  response.end();
}

function message(headers: Record<string, string>, payload: Json): Uint8Array {
  return codec.encode({
    headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, { type: 'string', value }])),
    body: new Uint8Array(Buffer.from(JSON.stringify(payload), 'utf8')),
  });
}

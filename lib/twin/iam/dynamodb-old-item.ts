import { request as httpRequest, type Agent, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { jsonBody, type Json } from './required-permissions.ts';

type AttributeMap = Record<string, unknown>;

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

/**
 * DynamoDB answers a failed condition with the item as it was when the write asked for it
 * (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), so a caller learns what is there without a second read. The
 * embedded store (dynalite 4) does not implement the parameter; the front door does, reading the item from the store
 * at once (the twin serves one request at a time per item, so it is the item the condition saw).
 */
export function oldItemRequest(target: string, body: Buffer): { table: string; key?: AttributeMap; item?: AttributeMap } | undefined {
  const operation = target.replace(/^DynamoDB_\d+\./, '');
  // Most writes do not ask: a byte search spares looking at their body at all.
  if (!WRITES.has(operation) || !body.includes('"ReturnValuesOnConditionCheckFailure"')) return undefined;
  // The body the permission check parsed already.
  const input = jsonBody(body);
  if (input.ReturnValuesOnConditionCheckFailure !== 'ALL_OLD' || typeof input.TableName !== 'string') return undefined;
  return { table: input.TableName, key: input.Key as AttributeMap | undefined, item: input.Item as AttributeMap | undefined };
}

function send(upstream: URL, agent: Agent, headers: IncomingHttpHeaders, target: string, input: Json): Promise<Json> {
  const body = Buffer.from(JSON.stringify(input));
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: 'POST',
        path: '/',
        agent,
        headers: {
          ...headers,
          'x-amz-target': `DynamoDB_20120810.${target}`,
          'content-length': String(body.length),
          'content-type': 'application/x-amz-json-1.0',
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Json));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const keySchemas = new Map<string, string[]>();

async function keyOf(upstream: URL, agent: Agent, headers: IncomingHttpHeaders, table: string, item: AttributeMap): Promise<AttributeMap> {
  let names = keySchemas.get(table);
  if (!names) {
    const described = await send(upstream, agent, headers, 'DescribeTable', { TableName: table });
    names =
      ((described.Table as Json | undefined)?.KeySchema as { AttributeName: string }[] | undefined)?.map((entry) => entry.AttributeName) ??
      [];
    keySchemas.set(table, names);
  }
  return Object.fromEntries(names.map((name) => [name, item[name]]));
}

/**
 * The store's answer, with `Item` added to a ConditionalCheckFailedException when the write asked for ALL_OLD. The
 * body changed, so its length is set anew and the store's checksum of the old body dropped.
 */
export async function withOldItem(
  upstream: URL,
  agent: Agent,
  requestHeaders: IncomingHttpHeaders,
  wanted: { table: string; key?: AttributeMap; item?: AttributeMap },
  response: IncomingMessage,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  const original = { status: response.statusCode ?? 502, headers: response.headers, body: Buffer.concat(chunks) };
  if (original.status !== 400) return original;
  const error = JSON.parse(original.body.toString('utf8') || '{}') as Json;
  if (typeof error.__type !== 'string' || !error.__type.endsWith('ConditionalCheckFailedException')) return original;
  const key = wanted.key ?? (wanted.item ? await keyOf(upstream, agent, requestHeaders, wanted.table, wanted.item) : undefined);
  if (!key) return original;
  const found = await send(upstream, agent, requestHeaders, 'GetItem', { TableName: wanted.table, Key: key, ConsistentRead: true });
  if (!found.Item) return original;
  const body = Buffer.from(JSON.stringify({ ...error, Item: found.Item }));
  const { 'x-amz-crc32': _checksum, ...headers } = original.headers;
  return { status: 400, headers: { ...headers, 'content-length': String(body.length) }, body };
}

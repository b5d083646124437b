import type { JsonSchema, OpenApiVersion } from './openapi.ts';

/*
 * `text/event-stream` responses in the OpenAPI documents. OpenAPI 3.2 describes each event with `itemSchema`; 3.1 has
 * no such field, so the 3.1 variant describes the body with `schema`, naming the same event union. Both name the
 * union as a component, which is what generated code exports (`RunStreamEvent`, ...).
 *
 * Examples show the wire text. 3.2 holds it whole as the example's `value`: a string for a media type that is not
 * JSON, which Spectral 6 and Redocly both accept (3.2's `serializedValue` is newer than Spectral 6). In 3.1 an
 * example's `value` is checked against `schema`, one event, so each event is an example of its own, its wire text
 * in `x-oai-serializedValue` (the OpenAPI Initiative's registered extension for versions before 3.2), and the whole
 * stream is shown in the response's description.
 */

/** One event as a server-sent-event parser hands it over: `data` is the text of its `data:` line. */
export interface SseItem {
  readonly id?: string;
  /** The `retry:` field: how long EventSource waits before it reconnects, in milliseconds. */
  readonly retry?: number;
  readonly event: string;
  readonly data: string;
}

export interface StreamExample {
  readonly summary: string;
  /** The response body exactly as sent: comment lines, then each event. */
  readonly wire: string;
  /** Each event of `wire`, parsed, with its own wire text. */
  readonly events: readonly { readonly item: SseItem; readonly wire: string }[];
}

export const componentRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/**
 * One server-sent event as a schema: the `event` name, the `id` when the event has one, `retry` (optional) where the
 * event may carry a reconnection hint, and `data`, a line of JSON whose own schema is `contentSchema`.
 */
export function sseEventSchema(
  event: string,
  dataComponent: string,
  options: { withId: boolean; description: string; retry?: string },
): JsonSchema {
  return {
    type: 'object',
    title: `${event} event`,
    description: options.description,
    properties: {
      event: { type: 'string', const: event },
      ...(options.withId
        ? {
            id: {
              type: 'string',
              pattern: '^[1-9][0-9]*$',
              description:
                "The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it",
            },
          }
        : {}),
      ...(options.retry ? { retry: { type: 'integer', minimum: 0, description: options.retry } } : {}),
      data: { type: 'string', contentMediaType: 'application/json', contentSchema: componentRef(dataComponent) },
    },
    required: ['event', 'data', ...(options.withId ? ['id'] : [])],
  };
}

/** The `text/event-stream` media type object of a response whose events are the component `eventComponent`. */
export function eventStreamMedia(
  eventComponent: string,
  examples: Readonly<Record<string, StreamExample>>,
  version: OpenApiVersion,
): JsonSchema {
  const named = Object.entries(examples);
  if (version === '3.2.0') {
    return {
      itemSchema: componentRef(eventComponent),
      ...(named.length > 0
        ? { examples: Object.fromEntries(named.map(([name, example]) => [name, { summary: example.summary, value: example.wire }])) }
        : {}),
    };
  }
  const perEvent = named.flatMap(([name, example]) =>
    example.events.map(({ item, wire }, index) => [
      `${name}_${index + 1}`,
      {
        summary: `${example.summary}: event ${index + 1} of ${example.events.length} (${item.event})`,
        value: { ...item, data: JSON.parse(item.data) as unknown },
        'x-oai-serializedValue': wire,
      },
    ]),
  );
  return { schema: componentRef(eventComponent), ...(perEvent.length > 0 ? { examples: Object.fromEntries(perEvent) } : {}) };
}

/**
 * The 3.1 variant gives each event's `data` as the JSON value its line carries: 3.1 tools (Redoc, Swagger UI, the
 * generators) ignore `contentSchema`, so a `data` typed as text would hide every field, and the SSE clients they
 * generate parse the line anyway. The wire text stays in each example's `x-oai-serializedValue`.
 */
export function eventDataAsValue<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((item: unknown) => eventDataAsValue(item)) as T;
  if (schema === null || typeof schema !== 'object') return schema;
  const node = schema as Record<string, unknown>;
  if (node.contentMediaType === 'application/json' && node.contentSchema) {
    return { ...node.contentSchema, description: 'The `data:` line: this value as one line of JSON text' } as T;
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, eventDataAsValue(value)])) as T;
}

/** What the 3.1 variant adds to a stream response's description: each example's wire text, whole. */
export function wireTextDescription(examples: Readonly<Record<string, StreamExample>>): string {
  return Object.values(examples)
    .map((example) => `\n\n${example.summary}, as sent:\n\n\`\`\`text\n${example.wire}\`\`\``)
    .join('');
}

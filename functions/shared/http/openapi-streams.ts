import { OPENAPI_VERSION, type JsonSchema, type OpenApiVersion } from './openapi-types.ts';

/*
 * `text/event-stream` responses in the OpenAPI documents. OpenAPI 3.2 describes each event with `itemSchema`: the
 * event union, a component (`RunStreamEvent`, ...) whose members name the event and give its `data` line as text with
 * a `contentSchema`.
 *
 * 3.1 has no place for an event's schema, and the tools read its `schema` two ways: a validating proxy (Prism) or a
 * client that reads the body whole holds the body, which is text, to it; an SSE client generated from it (hey-api)
 * types what it hands over for each event with it, which is the event's `data`, parsed, without the event's name. So
 * the 3.1 `schema` is either: the union of the events' data values (`RunStreamEventData`), or text. The event union
 * stays a component there too, its `data` the JSON value its line carries (3.1 tools ignore `contentSchema`), for
 * callers that parse the events themselves. Both variants show whole streams, as sent, as examples.
 */

export interface StreamExample {
  readonly summary: string;
  /** The response body exactly as sent: comment lines, then each event. */
  readonly wire: string;
}

export const componentRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** The 3.1 component of what a generated SSE client hands over for each event of the union `eventComponent`. */
export const eventDataComponent = (eventComponent: string) => `${eventComponent}Data`;

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
  const wholeStreams =
    named.length > 0
      ? { examples: Object.fromEntries(named.map(([name, example]) => [name, { summary: example.summary, value: example.wire }])) }
      : {};
  if (version === OPENAPI_VERSION) return { itemSchema: componentRef(eventComponent), ...wholeStreams };
  return {
    schema: {
      description:
        `For an SSE client generated from this document, each event's \`data\` (\`${eventDataComponent(eventComponent)}\`); ` +
        `the event itself, its name and id with it, is a \`${eventComponent}\`. Read whole, the body is text`,
      anyOf: [
        componentRef(eventDataComponent(eventComponent)),
        {
          type: 'string',
          description: `The body as sent: comment lines and events, each a \`${eventComponent}\` once parsed`,
          contentMediaType: 'text/event-stream',
          contentSchema: { type: 'array', items: componentRef(eventComponent) },
        },
      ],
    },
    ...wholeStreams,
  };
}

/**
 * The 3.1 component `eventDataComponent(name)` of the event union `events`: each event's data, titled with the
 * event's name (the one thing a generated client's item cannot say).
 */
export function eventDataUnion(name: string, events: JsonSchema): JsonSchema {
  const members = (Array.isArray(events.oneOf) ? events.oneOf : [events]) as JsonSchema[];
  const data = members.map((member) => {
    const properties = member.properties as Record<string, JsonSchema>;
    const event = (properties.event as { const: string }).const;
    return { title: event, ...(properties.data!.contentSchema as JsonSchema) };
  });
  const description =
    `The \`data\` of one event of a \`${name}\`, as the JSON value its line carries: what an SSE client generated from this ` +
    'document hands over for each event. The title of each member is the name of the event that carries it';
  return data.length === 1 ? { ...data[0], description } : { description, anyOf: data };
}

/**
 * The 3.1 variant gives each event's `data` as the JSON value its line carries: 3.1 tools (Redoc, Swagger UI, the
 * generators) ignore `contentSchema`, so a `data` typed as text would hide every field.
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

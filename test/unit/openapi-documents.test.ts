import { describe, expect, it } from 'vitest';
import { webhookApiDocument } from '#inbound/openapi.ts';
import { publishedApiDocument } from '#published/openapi.ts';
import { OPENAPI_31_VERSION, OPENAPI_VERSION } from '#shared/http/openapi.ts';
import { eventDataAsValue } from '#shared/http/openapi-streams.ts';
import { expectDocumented, parseEventStream } from '../support/openapi.ts';

/**
 * What the served documents promise beyond their schemas: an example of every refusal in the API's own error shape,
 * the wire text of every stream, its events named as a component, a 3.1 variant that says the same, and request
 * bodies that generators with their default options type as callers send them.
 */

type Json = Record<string, any>;

const APIS = [
  { name: 'published', base: '/api/v1/published', document: publishedApiDocument },
  { name: 'webhooks', base: '/api/v1/webhooks', document: webhookApiDocument },
] as const;

/** Each operation of a document, with a URL that reaches it (path parameters filled). */
function operationsOf(document: Json, base: string) {
  return Object.entries<Json>(document.paths).flatMap(([template, item]) =>
    Object.entries<Json>(item).map(([method, operation]) => ({
      method: method.toUpperCase(),
      template,
      operation,
      url: `http://127.0.0.1:3000${base}${template.replace('{workflow_id}', 'echo').replace('{execution_id}', 'e').replace('{token}', 'whk_x')}`,
    })),
  );
}

/** Every header a documented answer may require, with a valid value. */
const HEADERS = {
  'retry-after': '1',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  'x-execution-id': '3f2a9c1e-8d4b-4c7a-9e21-5b6f0d8a7c43',
  'content-location': '/api/v1/published/executions/3f2a9c1e-8d4b-4c7a-9e21-5b6f0d8a7c43/stream',
};

/** Every subschema of `schema`, depth first. */
function* subschemas(schema: unknown): Generator<Json> {
  if (typeof schema !== 'object' || schema === null) return;
  if (Array.isArray(schema)) {
    for (const item of schema) yield* subschemas(item);
    return;
  }
  yield schema;
  for (const value of Object.values(schema)) yield* subschemas(value);
}

describe.each(APIS)('the $name document', ({ base, document }) => {
  const current: Json = document(OPENAPI_VERSION);
  const legacy: Json = document(OPENAPI_31_VERSION);

  it("gives every refusal an example of its own status in the API's error shape", () => {
    for (const { method, template, operation, url } of operationsOf(current, base)) {
      const seen = new Map<string, string>();
      for (const [status, response] of Object.entries<Json>(operation.responses)) {
        if (Number(status) < 400) continue;
        const examples = Object.values<Json>(response.content['application/json'].examples ?? {});
        expect(examples.length, `${method} ${template} ${status}`).toBeGreaterThan(0);
        for (const { value } of examples) {
          expectDocumented(
            { method, url },
            { status: Number(status), headers: { 'content-type': 'application/json', ...HEADERS }, text: JSON.stringify(value) },
          );
          const text = JSON.stringify(value);
          expect(seen.get(text), `${method} ${template}: ${text} is the example of ${seen.get(text)} and ${status}`).toBeUndefined();
          seen.set(text, status);
        }
      }
    }
  });

  it('is served as 3.1 with the same content and no field of 3.2', () => {
    const withoutStreams = (doc: Json) =>
      JSON.parse(JSON.stringify({ ...doc, openapi: undefined }), (_key, value) => {
        if (value && typeof value === 'object' && value.content?.['text/event-stream'])
          return { ...value, content: { ...value.content, 'text/event-stream': undefined } };
        return value;
      });
    // What 3.1 adds: the data of each stream's events, which its stream `schema` names.
    const added = Object.keys(legacy.components.schemas).filter((name) => !(name in current.components.schemas));
    const streamed = new Set(
      operationsOf(current, base).flatMap(({ operation }) => {
        const ref = operation.responses['200']?.content?.['text/event-stream']?.itemSchema?.$ref as string | undefined;
        return ref ? [`${ref.split('/').at(-1)}Data`] : [];
      }),
    );
    const { schemas, ...components } = legacy.components;

    expect(current.openapi).toBe('3.2.0');
    expect(legacy.openapi).toBe('3.1.0');
    expect(JSON.stringify(legacy)).not.toMatch(/"(itemSchema|itemEncoding|prefixEncoding|dataValue|serializedValue|querystring)"/);
    expect(added.sort()).toEqual([...streamed].sort());
    const legacySchemas = Object.fromEntries(Object.entries<Json>(schemas).filter(([name]) => !streamed.has(name)));
    expect(withoutStreams({ ...legacy, components: { ...components, schemas: legacySchemas } })).toEqual(
      withoutStreams({ ...current, components: { ...current.components, schemas: eventDataAsValue(current.components.schemas) } }),
    );
    // Each event's data names its fields there: 3.1 tools ignore contentSchema.
    expect(JSON.stringify(legacy.components)).not.toContain('contentSchema');
  });

  it('says so where an object takes any property, and leaves the server its defaults where callers may omit a field', () => {
    for (const schema of subschemas(current.components.schemas)) {
      if (schema.type !== 'object') continue;
      const shaped = ['properties', 'additionalProperties', 'oneOf', 'anyOf', 'allOf'].some((keyword) => keyword in schema);
      expect(shaped, JSON.stringify(schema)).toBe(true);
    }
    const requestBodies = new Set(
      operationsOf(current, base).flatMap(({ operation }) =>
        operation.requestBody ? [operation.requestBody.content['application/json'].schema.$ref.split('/').at(-1)] : [],
      ),
    );
    expect(requestBodies.size).toBeGreaterThan(0);
    for (const name of requestBodies) {
      for (const schema of subschemas(current.components.schemas[name])) expect(schema, name).not.toHaveProperty('default');
    }
  });

  it('describes every operation, and names the scope of a keyed one without listing it on the bearer scheme', () => {
    for (const { method, template, operation } of operationsOf(current, base)) {
      expect(operation.description, `${method} ${template}`).toMatch(/\S/);
      if (operation['x-scope']) {
        expect(operation.security).toEqual([{ apiKey: [] }]);
        expect(operation.description).toContain(`\`${operation['x-scope']}\``);
      } else {
        expect(operation.security).toEqual([]);
      }
    }
  });
});

describe('the streams of the published document', () => {
  const base = '/api/v1/published';
  const current: Json = publishedApiDocument(OPENAPI_VERSION);
  const legacy: Json = publishedApiDocument(OPENAPI_31_VERSION);
  const streamOperations = operationsOf(current, base).filter(
    ({ operation }) => operation.responses['200']?.content?.['text/event-stream'],
  );

  it('are the four that stream', () => {
    expect(streamOperations.map(({ operation }) => operation.operationId).sort()).toEqual([
      'PublishedExecutionEvents',
      'PublishedStreamExecution',
      'PublishedStreamProbe',
      'PublishedStreamWorkflow',
    ]);
  });

  it("shows each stream's wire text, every event of which is one the document describes", () => {
    for (const { method, template, operation, url } of streamOperations) {
      const stream = operation.responses['200'].content['text/event-stream'];
      const examples = Object.values<Json>(stream.examples ?? {});
      expect(examples.length, `${method} ${template}`).toBeGreaterThan(0);
      for (const { value } of examples) {
        expect(parseEventStream(value).length, value).toBeGreaterThan(0);
        expectDocumented({ method, url }, { status: 200, headers: { 'content-type': 'text/event-stream', ...HEADERS }, text: value });
      }
    }
  });

  it("names each stream's events as a component; in 3.1, the body is their data (what SSE clients yield) or text", () => {
    for (const { method, template, operation } of streamOperations) {
      const stream = operation.responses['200'].content['text/event-stream'];
      const component = stream.itemSchema.$ref as string;
      const name = component.split('/').at(-1)!;
      expect(component, `${method} ${template}`).toMatch(/^#\/components\/schemas\/\w+Event$/);
      const variant = legacy.paths[template][method.toLowerCase()].responses['200'].content['text/event-stream'];

      expect(variant.schema.anyOf).toEqual([
        { $ref: `${component}Data` },
        expect.objectContaining({
          type: 'string',
          contentMediaType: 'text/event-stream',
          contentSchema: { type: 'array', items: { $ref: component } },
        }),
      ]);
      // The data of each event, titled with the event's name: the contentSchema of its `data` line in 3.2.
      const events = current.components.schemas[name];
      const members = (events.oneOf ?? [events]) as Json[];
      const data = legacy.components.schemas[`${name}Data`];
      expect((data.anyOf ?? [data]).map(({ title, $ref }: Json) => ({ title, $ref }))).toEqual(
        members.map((member) => ({ title: member.properties.event.const, $ref: member.properties.data.contentSchema.$ref })),
      );
      // The same whole streams as examples, which the text branch holds.
      expect(variant.examples).toEqual(stream.examples);
    }
  });
});

describe('the request bodies of the published document', () => {
  const document: Json = publishedApiDocument();
  const schemas = document.components.schemas;

  it('leave every field but user_id optional, and say what an omitted one becomes', () => {
    expect(schemas.ExecuteRequest.required).toEqual(['user_id']);
    expect(schemas.ExecuteRequest.properties.input.description).toMatch(/When omitted: `\{\}`/);
    expect(schemas.DecisionRequest.required).toBeUndefined();
    expect(schemas.DecisionRequest.properties.feedback.description).toBe('When omitted: `""`.');
  });

  it('type input, initial_memory and overrides as the objects the API takes', () => {
    expect(schemas.ExecuteRequest.properties.input).toMatchObject({
      type: 'object',
      additionalProperties: true,
      properties: { message: { type: 'string' } },
    });
    expect(schemas.ExecuteRequest.properties.initial_memory).toMatchObject({ type: 'object', additionalProperties: true });
    expect(schemas.ExecuteRequest.properties.overrides).toMatchObject({
      type: 'object',
      additionalProperties: { type: 'object', additionalProperties: true },
    });
  });
});

/** OpenAPI 3.2: `itemSchema` describes each server-sent event of a `text/event-stream` response. */
export const OPENAPI_VERSION = '3.2.0';

/** The variant for tools that read OpenAPI 3.1 but not 3.2. */
export const OPENAPI_31_VERSION = '3.1.0';

export type OpenApiVersion = typeof OPENAPI_VERSION | typeof OPENAPI_31_VERSION;

export type JsonSchema = Record<string, unknown>;

import { webhookApiDocument } from '#inbound/openapi.ts';
import { publishedApiDocument } from '#published/openapi.ts';
import { OPENAPI_31_VERSION, OPENAPI_VERSION, type JsonSchema } from '#shared/http/openapi.ts';

/** Every document the APIs serve, named after its route: both APIs, as OpenAPI 3.2 and as 3.1. */
export function servedDocuments(): { name: string; document: JsonSchema }[] {
  return [
    { name: 'published-openapi.json', document: publishedApiDocument(OPENAPI_VERSION) },
    { name: 'published-openapi-3.1.json', document: publishedApiDocument(OPENAPI_31_VERSION) },
    { name: 'webhooks-openapi.json', document: webhookApiDocument(OPENAPI_VERSION) },
    { name: 'webhooks-openapi-3.1.json', document: webhookApiDocument(OPENAPI_31_VERSION) },
  ];
}

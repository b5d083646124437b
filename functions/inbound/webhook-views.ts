import { sameShape, type Same } from '#shared/same-shape.ts';
import * as z from '#shared/zod.ts';
import type { IngestOutcome } from './ingest-service.ts';
import { connectorTypeSchema } from './link-model.ts';

/**
 * What the Inbound Conversation Webhook API answers (ping, and an accepted or duplicate event), as zod
 * schemas: the OpenAPI document (openapi.ts) is generated from them, and IngestOutcome is checked against them at
 * compile time.
 */

export const pingResponseSchema = z.object({
  status: z.literal('ok').check(z.meta({ description: 'The link is known' })),
  state: z
    .enum(['bound', 'issued'])
    .check(z.meta({ description: 'bound: events are accepted; issued: no source connected yet, POST /events answers 409' })),
  connector_type: connectorTypeSchema.check(z.meta({ description: 'calls accepts `call` events, dialogs `text` events' })),
});

const eventId = z.int().check(z.minimum(1), z.meta({ description: "The platform's id of the event", examples: [1042] }));
const externalId = z.string().check(z.meta({ description: "Echo of the sender's id" }));

export const acceptedResponseSchema = z.object({
  status: z.literal('accepted'),
  external_id: externalId,
  event_id: eventId,
  messages: z.int().check(z.minimum(0), z.meta({ description: 'Accepted messages (0 for a call)' })),
});

export const duplicateResponseSchema = z.object({
  status: z
    .literal('duplicate')
    .check(z.meta({ description: 'The external_id was accepted before: the first variant is kept, this one ignored' })),
  external_id: externalId,
  event_id: eventId,
});

sameShape<Same<IngestOutcome, z.output<typeof acceptedResponseSchema> | z.output<typeof duplicateResponseSchema>>>();

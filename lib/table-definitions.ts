import type { TableName } from '../functions/shared/resources.ts';
import { BY_RECEIVED_INDEX } from '../functions/inbound/events-repository.ts';

/**
 * Key schemas of every table, read by the CDK data construct and by the local twin, so both
 * create the same tables. All keys are strings.
 */
export interface IndexDefinition {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  /** Attributes copied into the index besides the keys; keeps index writes to one unit. */
  readonly projectedAttributes: readonly string[];
}

export interface TableDefinition {
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly timeToLiveAttribute: string;
  readonly indexes: readonly IndexDefinition[];
}

export const TABLE_DEFINITIONS: Record<TableName, TableDefinition> = {
  links: { partitionKey: 'pk', timeToLiveAttribute: 'expires_at', indexes: [] },
  counters: { partitionKey: 'pk', timeToLiveAttribute: 'expires_at', indexes: [] },
  inboundEvents: {
    partitionKey: 'source_id',
    sortKey: 'external_id',
    timeToLiveAttribute: 'expires_at',
    indexes: [
      {
        name: BY_RECEIVED_INDEX,
        partitionKey: 'source_id',
        sortKey: 'received_key',
        projectedAttributes: [
          'event_id', 'type', 'state', 'received_at', 'source_channel', 'direction',
          'metadata_fields', 'message_count', 'delivery_failures', 'expires_at',
        ],
      },
    ],
  },
};

import type { TableName } from '../resources.ts';

/** A secondary index as DynamoDB bills a write to it: its keys and the attributes projected beside them. */
export interface IndexShape {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  /** Attributes copied into the index besides the keys (the table's and its own). */
  readonly projectedAttributes: readonly string[];
}

/** A table's keys and secondary indexes: what a put into it stores and costs (item-size.ts putCost). */
export interface TableShape {
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly indexes: readonly IndexShape[];
}

/** The inbound events in the order they were received, per source: what the nightly collection and `links` read. */
export const BY_RECEIVED: IndexShape = {
  name: 'by_received',
  partitionKey: 'source_id',
  sortKey: 'received_key',
  projectedAttributes: [
    'event_id',
    'type',
    'state',
    'received_at',
    'source_channel',
    'direction',
    'metadata_fields',
    'message_count',
    'delivery_failures',
    'expires_at',
  ],
};

/** The tables with secondary indexes (lib/cdk/table-definitions.ts creates them from here); every other has none. */
export const INDEXED_TABLES: Partial<Record<TableName, TableShape>> = {
  inboundEvents: { partitionKey: 'source_id', sortKey: 'external_id', indexes: [BY_RECEIVED] },
};

import type { TableName } from '#shared/resources.ts';
import { BY_RECEIVED } from '#shared/store/table-indexes.ts';

/**
 * Key schemas of every table, read by the CDK data construct and by the local twin, so both
 * create the same tables. All keys are strings.
 */
interface IndexDefinition {
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
    indexes: [BY_RECEIVED],
  },
  /** `key#<sha256>` items answer an authentication in one read; `keyid#<id>` items hold the key's record. */
  apiKeys: { partitionKey: 'pk', timeToLiveAttribute: 'expires_at', indexes: [] },
  /** `project#<id>`/`active` points at the live publication; `publication#<id>`/`workflow#<id>` items are immutable. */
  publications: { partitionKey: 'pk', sortKey: 'sk', timeToLiveAttribute: 'expires_at', indexes: [] },
  executions: { partitionKey: 'pk', timeToLiveAttribute: 'expires_at', indexes: [] },
  /** `memory#<project>#<user>` with one item per key; `thread#<project>#<user>#<thread>` with one item per turn. */
  userState: { partitionKey: 'pk', sortKey: 'sk', timeToLiveAttribute: 'expires_at', indexes: [] },
  /** `run#<execution>` with one item per batch of an execution's stream events (sort key: the first event id, zero-padded). */
  streamEvents: { partitionKey: 'pk', sortKey: 'sk', timeToLiveAttribute: 'expires_at', indexes: [] },
  /** `tasks`/`<task_id>`: collection tasks; `runs#<task_id>`/`<sweep_id>`: each sweep's checkpoint and counts. */
  collection: { partitionKey: 'pk', sortKey: 'sk', timeToLiveAttribute: 'expires_at', indexes: [] },
  usage: { partitionKey: 'pk', sortKey: 'sk', timeToLiveAttribute: 'expires_at', indexes: [] },
};

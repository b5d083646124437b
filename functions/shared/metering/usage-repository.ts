import { DeleteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { allStoredItems } from '../store/paginate.ts';
import { COST_UNIT_NAMES, type CostUnits, type ModelUsage } from './cost-meter.ts';
import { modelUsageOf, usageAttribute, usageSortKey } from './usage-meter.ts';

/** One usage item as a report reads it: whose it is, its UTC day, every unit (0 without a counter) and its models. */
export interface UsageItem {
  subject: string;
  day: string;
  units: Partial<CostUnits>;
  models: ModelUsage;
}

/**
 * The usage table read back: the items the usage meter (usage-meter.ts, which names their keys and counters) and a
 * link's limits wrote, each day's shards and limits item as they are stored (the report adds them up).
 */
export function createUsageRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    /**
     * The items of the UTC days `from` to `to` (YYYY-MM-DD, both included): one subject's (`project#<id>`,
     * `link#<id>`) with a Query, or every subject's with a Scan, as reports are rare.
     */
    async itemsBetween(from: string, to: string, subject?: string): Promise<UsageItem[]> {
      // `~` sorts after every part that follows a day in its sort keys (shard digits, `limits`).
      const range = { ':from': usageSortKey(from, ''), ':to': usageSortKey(to, '~') };
      const items = await allStoredItems(
        client,
        subject
          ? {
              query: {
                TableName: tableName,
                KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
                ExpressionAttributeValues: { ':pk': subject, ...range },
              },
            }
          : { scan: { TableName: tableName, FilterExpression: 'sk BETWEEN :from AND :to', ExpressionAttributeValues: range } },
      );
      return items.map((item) => ({
        subject: String(item.pk),
        day: String(item.sk).slice(0, 10),
        units: Object.fromEntries(COST_UNIT_NAMES.map((name) => [name, Number(item[usageAttribute(name)] ?? 0)])),
        models: modelUsageOf(item),
      }));
    },

    /**
     * Deletes every usage item of one subject (its day shards and, for a link, its limits items): `admin verify` leaves
     * its own temporary link out of every report this way. Answers how many it deleted.
     */
    async removeSubject(subject: string): Promise<number> {
      const keys = await allStoredItems<{ pk: string; sk: string }>(client, {
        query: {
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': subject },
          ProjectionExpression: 'pk, sk',
        },
      });
      for (const key of keys) await client.send(new DeleteCommand({ TableName: tableName, Key: { pk: key.pk, sk: key.sk } }));
      return keys.length;
    },
  };
}

import { randomInt } from 'node:crypto';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DAY_MS, epochSeconds } from '../time.ts';
import { COST_UNIT_NAMES, type CostUnits } from './cost-meter.ts';

/** Usage items are kept 400 days: a year of reports, and last year's same month. */
export const USAGE_RETENTION_MS = 400 * DAY_MS;
/**
 * A subject's day is spread over this many items, so a busy link's or project's counter never becomes a hot key
 * (one partition takes 1,000 writes a second); the report adds them up.
 */
export const USAGE_SHARDS = 8;
/** The usage write itself: one small UpdateItem. */
const USAGE_WRITE_UNITS = 1;

/** A usage item's counter for each unit (snake case, as the report and lib/pricing/README.md name them). */
export const usageAttribute = (name: keyof CostUnits) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/**
 * Adds what one invocation spent to its subject's usage item for the day (UTC): one UpdateItem with ADD, no read,
 * and no per-token or per-event counter. Its own write unit is in what it adds. An invocation nobody is billed for
 * (an unknown token, a refused key) writes nothing: abuse must not cost a write per try.
 */
export function createUsageMeter(client: DynamoDBDocumentClient, tableName: string) {
  return {
    async add(subject: string, spent: CostUnits, nowMs: number): Promise<void> {
      const units: CostUnits = { ...spent, dynamoWriteUnits: spent.dynamoWriteUnits + USAGE_WRITE_UNITS };
      // A correction may take back what an earlier write of the same invocation expected (a negative ADD).
      const counted = COST_UNIT_NAMES.filter((name) => units[name] !== 0);
      const day = new Date(nowMs).toISOString().slice(0, 10);
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { pk: subject, sk: `${day}#${randomInt(USAGE_SHARDS)}` },
          UpdateExpression: `SET expires_at = :expires ADD ${counted.map((_, i) => `#u${i} :u${i}`).join(', ')}`,
          ExpressionAttributeNames: Object.fromEntries(counted.map((name, i) => [`#u${i}`, usageAttribute(name)])),
          ExpressionAttributeValues: { ':expires': epochSeconds(nowMs + USAGE_RETENTION_MS), ...Object.fromEntries(counted.map((name, i) => [`:u${i}`, units[name]])) },
        }),
      );
    },
  };
}

export type UsageMeter = ReturnType<typeof createUsageMeter>;

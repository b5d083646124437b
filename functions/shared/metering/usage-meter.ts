import { createHash, randomInt } from 'node:crypto';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DAY_MS, epochSeconds } from '../time.ts';
import {
  COST_UNIT_NAMES,
  countModel,
  emptyModelUsage,
  hasModelUsage,
  MODEL_COUNTER_NAMES,
  type CostUnits,
  type ModelCounterName,
  type ModelUsage,
} from './cost-meter.ts';

/** Usage items are kept 400 days: a year of reports, and last year's same month. */
export const USAGE_RETENTION_MS = 400 * DAY_MS;
/**
 * A subject's day is spread over this many items, so a busy link's or project's counter never becomes a hot key
 * (one partition takes 1,000 writes a second); the report adds them up.
 */
const USAGE_SHARDS = 8;
/** The usage write itself: one small UpdateItem. */
const USAGE_WRITE_UNITS = 1;

/**
 * A usage item's sort key: its UTC day (YYYY-MM-DD), then which of the subject's items of that day it is (a shard,
 * or `limits` for a link's limits item), so the items of a period are one key range.
 */
export const usageSortKey = (day: string, part: number | string) => `${day}#${part}`;

/** A usage item's counter for each unit (snake case, as the report and lib/pricing/README.md name them). */
export const usageAttribute = (name: keyof CostUnits) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** DynamoDB's limit that matters for a counter's name: 255 bytes (an attribute name in a projection or an index). */
export const MAX_USAGE_ATTRIBUTE_BYTES = 255;
const MODEL_PREFIX = 'model#';
/** What a model id keeps of itself when its counter names would pass the limit: the rest is a hash, so it reads as unknown. */
const MODEL_ID_MAX_BYTES =
  MAX_USAGE_ATTRIBUTE_BYTES - MODEL_PREFIX.length - 1 - Math.max(...MODEL_COUNTER_NAMES.map((name) => name.length)) - 9;

/**
 * A usage item's counter for one model: `model#<model id>#<counter>`, e.g. `model#amazon.nova-lite-v1:0#input_tokens`
 * or `model#amazon.nova-canvas-v1:0#images_premium_2048`; the id is the logical one (`us.<id>` for a profile,
 * `scripted` offline), never an ARN. Catalog ids are short; an id whose names would pass 255 bytes keeps its first
 * bytes and a hash (`…~<8 hex>`), which no price sheet names: the report lists it as unpriced, never as another model.
 */
export function modelAttribute(modelId: string, counter: ModelCounterName): string {
  return `${MODEL_PREFIX}${boundedModelId(modelId)}#${counter}`;
}

function boundedModelId(modelId: string): string {
  if (Buffer.byteLength(modelId, 'utf8') <= MODEL_ID_MAX_BYTES + 9) return modelId;
  let kept = '';
  for (const character of modelId) {
    if (Buffer.byteLength(kept + character, 'utf8') > MODEL_ID_MAX_BYTES) break;
    kept += character;
  }
  return `${kept}~${createHash('sha256').update(modelId, 'utf8').digest('hex').slice(0, 8)}`;
}

/** The per-model counters of a stored usage item (or of any item written with `modelAttribute` names). */
export function modelUsageOf(item: Record<string, unknown>): ModelUsage {
  const usage = emptyModelUsage();
  for (const [name, value] of Object.entries(item)) {
    if (!name.startsWith(MODEL_PREFIX)) continue;
    const separator = name.lastIndexOf('#');
    const counter = name.slice(separator + 1) as ModelCounterName;
    if (separator <= MODEL_PREFIX.length || !MODEL_COUNTER_NAMES.includes(counter)) continue;
    countModel(usage, name.slice(MODEL_PREFIX.length, separator), { [counter]: Number(value) });
  }
  return usage;
}

/**
 * Adds what one invocation spent to its subject's usage item for the day (UTC): one UpdateItem with ADD, no read,
 * and no per-token or per-event item: a model's tokens and images are counters of the same item, a few per model
 * the invocation used (the models are bounded by the catalog, so the item stays a few KB). Its own write unit is in
 * what it adds. An invocation nobody is billed for (an unknown token, a refused key) writes nothing: abuse must not
 * cost a write per try.
 */
export function createUsageMeter(client: DynamoDBDocumentClient, tableName: string) {
  return {
    /** `models`: what the invocation's models did, one more counter per model and counter (`modelAttribute`). */
    async add(subject: string, spent: CostUnits, nowMs: number, models?: ModelUsage): Promise<void> {
      const units: CostUnits = { ...spent, dynamoWriteUnits: spent.dynamoWriteUnits + USAGE_WRITE_UNITS };
      // A correction may take back what an earlier write of the same invocation expected (a negative ADD).
      const counters: [string, number][] = COST_UNIT_NAMES.filter((name) => units[name] !== 0).map((name) => [
        usageAttribute(name),
        units[name],
      ]);
      if (hasModelUsage(models)) {
        for (const modelId of Object.keys(models)) {
          for (const counter of MODEL_COUNTER_NAMES) {
            const value = models[modelId]![counter] ?? 0;
            if (value !== 0) counters.push([modelAttribute(modelId, counter), value]);
          }
        }
      }
      const day = new Date(nowMs).toISOString().slice(0, 10);
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { pk: subject, sk: usageSortKey(day, randomInt(USAGE_SHARDS)) },
          UpdateExpression: `SET expires_at = :expires ADD ${counters.map((_, i) => `#u${i} :u${i}`).join(', ')}`,
          ExpressionAttributeNames: Object.fromEntries(counters.map(([name], i) => [`#u${i}`, name])),
          ExpressionAttributeValues: {
            ':expires': epochSeconds(nowMs + USAGE_RETENTION_MS),
            ...Object.fromEntries(counters.map(([, value], i) => [`:u${i}`, value])),
          },
        }),
      );
    },
  };
}

export type UsageMeter = ReturnType<typeof createUsageMeter>;

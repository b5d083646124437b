import { readFileSync } from 'node:fs';
import { PROFILE_PREFIX } from '#shared/bedrock-catalog.ts';
import {
  COST_UNIT_NAMES,
  MODEL_COUNTER_NAMES,
  type CostUnits,
  type ModelCounterName,
  type ModelCounters,
} from '#shared/metering/cost-meter.ts';

export interface PriceSheet {
  region: string;
  currency: 'USD';
  date: string;
  source: string;
  /**
   * Per metered unit. A unit whose price has a source or date of its own says so (`source`, `date`); the others are
   * the sheet's. `usd_per_gb`: a per-byte unit's price as its page quotes it (GB = 2^30 bytes).
   */
  units: Record<
    keyof CostUnits,
    { service: string; usd_per_unit: number; basis: string; usd_per_gb?: number; source?: string; date?: string }
  >;
  /**
   * What the stack bills each month whatever its traffic (`usd`: per item and month), and what only bills when
   * something goes wrong (`usd: 0`, with its per-request price): see lib/pricing/fixed-costs.ts.
   */
  fixed_monthly: Record<FixedMonthlyItem, { usd: number; usd_per_million_requests?: number; basis: string }>;
  /** Per model or inference profile (a profile without its own entry costs what its model does). */
  models: Record<string, ModelPrice>;
}

export const FIXED_MONTHLY_ITEMS = ['alarm_metric', 'dashboard', 'kms_key', 'custom_metric', 'dead_letter_queue'] as const;
export type FixedMonthlyItem = (typeof FIXED_MONTHLY_ITEMS)[number];

export interface ModelPrice {
  input_usd_per_million?: number;
  output_usd_per_million?: number;
  /** Prompt-cache tokens, where the model bills them (Bedrock's `cacheReadInputTokens` / `cacheWriteInputTokens`). */
  cache_read_usd_per_million?: number;
  cache_write_usd_per_million?: number;
  /** Per image, by quality and size class: `standard_1024` is standard quality up to 1024 x 1024 pixels, and so on. */
  usd_per_image?: Partial<Record<ImageClass, number>>;
  source: string;
  date: string;
}

export const IMAGE_CLASSES = ['standard_1024', 'standard_2048', 'premium_1024', 'premium_2048'] as const;
export type ImageClass = (typeof IMAGE_CLASSES)[number];

/** What one counter of a model costs per unit, or undefined where the sheet has no price for it. */
function counterPrice(price: ModelPrice, counter: ModelCounterName): number | undefined {
  const perMillion = (usd: number | undefined) => (usd === undefined ? undefined : usd / 1_000_000);
  switch (counter) {
    case 'input_tokens':
      return perMillion(price.input_usd_per_million);
    case 'output_tokens':
      return perMillion(price.output_usd_per_million);
    case 'cache_read_tokens':
      return perMillion(price.cache_read_usd_per_million);
    case 'cache_write_tokens':
      return perMillion(price.cache_write_usd_per_million);
    default:
      return price.usd_per_image?.[counter.slice('images_'.length) as ImageClass];
  }
}

/** A model's counters in dollars, tokens and images apart; priced: false (and no dollars) where it cannot be priced. */
export interface ModelCost {
  priced: boolean;
  tokens_usd: number;
  images_usd: number;
  source: string | null;
}

/**
 * Prices what one model did with its own price (`modelPriceOf`: a profile falls back to its foundation model's price
 * unless it has its own). A model the sheet does not know, or a counter its entry has no price for (a cache write
 * on a model priced without one, an image class it does not list), is unpriced: never priced as another model.
 */
export function modelCostOf(sheet: PriceSheet, modelId: string, counters: ModelCounters): ModelCost {
  const price = modelPriceOf(sheet, modelId);
  const unpriced = { priced: false, tokens_usd: 0, images_usd: 0, source: price?.source ?? null };
  if (!price) return unpriced;
  let tokens = 0;
  let images = 0;
  for (const counter of MODEL_COUNTER_NAMES) {
    const count = counters[counter] ?? 0;
    if (count === 0) continue;
    const usd = counterPrice(price, counter);
    if (usd === undefined) return unpriced;
    if (counter.startsWith('images_')) images += count * usd;
    else tokens += count * usd;
  }
  return { priced: true, tokens_usd: tokens, images_usd: images, source: price.source };
}

/** A model id's price: its own entry, else its foundation model's (`us.<id>` → `<id>`); undefined when unpriced. */
export function modelPriceOf(sheet: PriceSheet, modelId: string): ModelPrice | undefined {
  const own = Object.hasOwn(sheet.models, modelId) ? sheet.models[modelId] : undefined;
  const base = modelId.replace(PROFILE_PREFIX, '');
  return own ?? (Object.hasOwn(sheet.models, base) ? sheet.models[base] : undefined);
}

/** `lib/pricing/<region>.json`: a price for every unit the product meters, with its source and date. */
export function loadPriceSheet(region = 'us-east-1'): PriceSheet {
  if (!/^[a-z]{2}(-[a-z]+)+-\d$/.test(region)) throw new Error(`${region} is not a region name`);
  let sheet: PriceSheet;
  try {
    sheet = JSON.parse(readFileSync(new URL(`./${region}.json`, import.meta.url), 'utf8')) as PriceSheet;
  } catch {
    throw new Error(`No price sheet for ${region}: add lib/pricing/${region}.json`);
  }
  const missing = COST_UNIT_NAMES.filter((name) => !sheet.units[name]);
  if (missing.length > 0) throw new Error(`lib/pricing/${region}.json has no price for ${missing.join(', ')}`);
  return sheet;
}

export function priceOf(sheet: PriceSheet, units: Partial<CostUnits>): number {
  return COST_UNIT_NAMES.reduce((sum, name) => sum + (units[name] ?? 0) * sheet.units[name].usd_per_unit, 0);
}

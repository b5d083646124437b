import { readdirSync, readFileSync } from 'node:fs';
import { PROFILE_PREFIX } from '#shared/bedrock-catalog.ts';
import {
  COST_UNIT_NAMES,
  MODEL_COUNTER_NAMES,
  type CostUnits,
  type ModelCounterName,
  type ModelCounters,
} from '#shared/metering/cost-meter.ts';

/** One line of the bill a metered unit appears on, priced as AWS's page quotes it. */
export interface BillLine {
  /** The report's name for it, unique across the sheet (a unit with two prices has two lines). */
  line: string;
  /** The service and usage type as Cost Explorer names them (null where nothing is billed). */
  service: string | null;
  usage_type: string | null;
  /** The list price, in dollars per `per` as the page quotes it. */
  usd: number;
  per: QuotedUnit;
  basis: string;
  /** Where a line's price comes from a page of its own. */
  source?: string;
}

/** A bill line with its price converted to the metered unit (QUOTED_UNITS: the one place a price changes unit). */
export interface PricedLine extends BillLine {
  usd_per_unit: number;
}

export interface PriceSheet {
  region: string;
  currency: 'USD';
  date: string;
  source: string;
  /** Per metered unit, its bill lines and what one unit costs on all of them together. */
  units: Record<keyof CostUnits, { lines: PricedLine[]; usd_per_unit: number }>;
  /**
   * What the stack bills each month whatever its traffic (`usd`: per item and month), and what only bills when
   * something goes wrong (`usd: 0`, with its per-request price): see lib/pricing/fixed-costs.ts.
   */
  fixed_monthly: Record<FixedMonthlyItem, { usd: number; usd_per_million_requests?: number; basis: string }>;
  /** What a sample of the traffic bills, which no request can meter (lib/pricing/xray-traces.ts forecasts it). */
  sampled: { xray_traces: Pick<BillLine, 'service' | 'usage_type' | 'usd' | 'basis' | 'source'> & { per: 'million' } };
  /** Per model or inference profile (a profile without its own entry costs what its model does). */
  models: Record<string, ModelPrice>;
}

/** The sheet as written: each unit's lines in the page's own units. */
type SheetFile = Omit<PriceSheet, 'units'> & { units: Record<keyof CostUnits, BillLine[]> };

/** GB as AWS bills storage and transfer: 2^30 bytes. */
const GB = 2 ** 30;

/**
 * How many metered units one quoted unit holds, by what the meter counts: a count (requests, read units, tokens), a
 * GB-millisecond (Lambda duration × memory) or a byte. A price quoted in any other unit for a meter is refused when
 * the sheet loads, so a meter and its price cannot drift apart.
 */
const QUOTED_UNITS = {
  count: { each: 1, thousand: 1_000, million: 1_000_000 },
  gbMs: { 'GB-second': 1_000 },
  bytes: { GB, 'GB-month': GB },
} as const;
type QuotedUnit = { [M in keyof typeof QUOTED_UNITS]: keyof (typeof QUOTED_UNITS)[M] }[keyof typeof QUOTED_UNITS];

const METERED_IN: Partial<Record<keyof CostUnits, keyof typeof QUOTED_UNITS>> = {
  lambdaGbMs: 'gbMs',
  storedBytes: 'bytes',
  s3StoredBytes: 'bytes',
  logBytes: 'bytes',
  dataTransferOutBytes: 'bytes',
};

/** What one metered unit of `name` costs on `line`; throws when the line quotes a unit the meter does not count in. */
export function pricePerMeteredUnit(name: keyof CostUnits, line: Pick<BillLine, 'usd' | 'per'>): number {
  const measure = METERED_IN[name] ?? 'count';
  const size = (QUOTED_UNITS[measure] as Record<string, number>)[line.per];
  if (size === undefined) {
    const quotable = Object.keys(QUOTED_UNITS[measure]).join(' or ');
    throw new Error(`${name} is metered per ${measure}; a price per ${String(line.per)} cannot price it (use ${quotable})`);
  }
  return line.usd / size;
}

export const FIXED_MONTHLY_ITEMS = ['alarm_metric', 'dashboard', 'kms_key', 'custom_metric', 'dead_letter_queue'] as const;
type FixedMonthlyItem = (typeof FIXED_MONTHLY_ITEMS)[number];

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

type ImageClass = 'standard_1024' | 'standard_2048' | 'premium_1024' | 'premium_2048';

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

/** `lib/pricing/<region>.json`: every metered unit's bill lines, with their source and date. */
export function loadPriceSheet(region = 'us-east-1'): PriceSheet {
  if (!/^[a-z]{2}(-[a-z]+)+-\d$/.test(region)) throw new Error(`${region} is not a region name`);
  let file: SheetFile;
  try {
    file = JSON.parse(readFileSync(new URL(`./${region}.json`, import.meta.url), 'utf8')) as SheetFile;
  } catch {
    throw new NoPriceSheet(region);
  }
  const missing = COST_UNIT_NAMES.filter((name) => !Array.isArray(file.units[name]) || file.units[name].length === 0);
  if (missing.length > 0) throw new Error(`lib/pricing/${region}.json has no price for ${missing.join(', ')}`);
  const units = Object.fromEntries(
    COST_UNIT_NAMES.map((name) => {
      const lines = file.units[name].map((line) => ({ ...line, usd_per_unit: pricePerMeteredUnit(name, line) }));
      return [name, { lines, usd_per_unit: lines.reduce((sum, line) => sum + line.usd_per_unit, 0) }];
    }),
  ) as PriceSheet['units'];
  return { ...file, units };
}

/** The regions lib/pricing has a sheet for (its `<region>.json` files). */
function pricedRegions(): string[] {
  return readdirSync(new URL('.', import.meta.url))
    .filter((name) => REGION_FILE.test(name))
    .map((name) => name.slice(0, -'.json'.length))
    .sort();
}
const REGION_FILE = /^[a-z]{2}(-[a-z]+)+-\d\.json$/;

export class NoPriceSheet extends Error {
  override name = 'NoPriceSheet';
  constructor(readonly region: string) {
    super(
      `No price sheet for ${region}: lib/pricing has ${pricedRegions().join(', ')}; add lib/pricing/${region}.json with that region's ` +
        `list prices rather than price it at another region's`,
    );
  }
}

export function priceOf(sheet: PriceSheet, units: Partial<CostUnits>): number {
  return COST_UNIT_NAMES.reduce((sum, name) => sum + (units[name] ?? 0) * sheet.units[name].usd_per_unit, 0);
}

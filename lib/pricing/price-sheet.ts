import { readFileSync } from 'node:fs';
import { PROFILE_PREFIX } from '#shared/bedrock-catalog.ts';
import { COST_UNIT_NAMES, type CostUnits } from '#shared/metering/cost-meter.ts';

export interface PriceSheet {
  region: string;
  currency: 'USD';
  date: string;
  source: string;
  units: Record<keyof CostUnits, { service: string; usd_per_unit: number; basis: string }>;
  fixed_monthly: Record<'alarm_metric' | 'dashboard' | 'kms_key', { usd: number; basis: string }>;
  /** Per model or inference profile (a profile without its own entry costs what its model does). */
  models: Record<string, ModelPrice>;
}

export interface ModelPrice {
  input_usd_per_million?: number;
  output_usd_per_million?: number;
  /** Per image, by quality and size class. */
  usd_per_image?: Record<string, number>;
  source: string;
  date: string;
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

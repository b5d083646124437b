import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROUTE_GROUPS } from '#shared/http/route-groups.ts';
import { customMetricCount, ROUTE_GROUP_METRICS, SERVICE_METRICS } from '#shared/lambda/custom-metrics.ts';
import { fixedMonthlyCosts } from '#lib/pricing/fixed-costs.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';

/**
 * CloudWatch bills every custom metric (name × dimension values) per month: the count the fixed monthly cost uses
 * must be what the functions publish. This reads their source, every `addMetric` call and every way Powertools
 * could add a dimension, so a metric added, renamed or given a new dimension fails here until the list follows.
 */
const FUNCTIONS = fileURLToPath(new URL('../../functions/', import.meta.url));

function sources(dir: string): { path: string; text: string }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [{ path: relative(FUNCTIONS, path), text: readFileSync(path, 'utf8') }] : [];
  });
}

/** Each `<receiver>.addMetric(<name expression>, ...)`: the receiver and every string literal of the name expression. */
function publishedMetrics() {
  return sources(FUNCTIONS).flatMap(({ path, text }) =>
    [...text.matchAll(/(\w+)\.addMetric\(([^,]+),/g)].map((match) => ({
      path,
      receiver: match[1]!,
      // A literal, or a condition choosing between two: the names are the literals after its `?`.
      names: [...match[2]!.slice(match[2]!.lastIndexOf('?') + 1).matchAll(/'([A-Za-z0-9]+)'/g)].map((name) => name[1]!),
      literal: /^\s*(?:'[A-Za-z0-9]+'|.*\?\s*'[A-Za-z0-9]+'\s*:\s*'[A-Za-z0-9]+')\s*$/.test(match[2]!),
    })),
  );
}

describe('the custom metrics the functions publish', () => {
  const published = publishedMetrics();

  it('are named by literals in the code, so a reader (and this test) can count them', () => {
    expect(published.length).toBeGreaterThan(10);
    for (const call of published) expect(call.literal, `${call.path}: ${call.names.join(', ')}`).toBe(true);
  });

  it('are exactly the list, the per-group ones through the route-group Metrics and the rest with `service` alone', () => {
    const grouped = new Set(published.filter((call) => call.receiver === 'groupMetrics').flatMap((call) => call.names));
    const service = new Set(published.filter((call) => call.receiver !== 'groupMetrics').flatMap((call) => call.names));
    expect([...grouped].sort()).toEqual([...ROUTE_GROUP_METRICS].sort());
    expect([...service].sort()).toEqual([...SERVICE_METRICS].sort());
    for (const call of published) expect(['metrics', 'groupMetrics'], call.path).toContain(call.receiver);
  });

  it('have no dimension beyond `service` and, for the group metrics, `RouteGroup`', () => {
    for (const { path, text } of sources(FUNCTIONS)) {
      expect(text, path).not.toMatch(/\.addDimensions?\(|\.singleMetric\(|captureColdStartMetric|setDefaultDimensions/);
      for (const construction of text.matchAll(/new Metrics\(([^)]*)\)/g)) {
        expect(['', '{ defaultDimensions: { RouteGroup: group } }'], path).toContain(construction[1]!.trim());
      }
    }
  });

  it('count as the fixed monthly cost says: each service metric once, each group metric once per route group', () => {
    // The webhook API's HTTP API measures its own requests: its group publishes none.
    expect(customMetricCount()).toBe(SERVICE_METRICS.length + ROUTE_GROUP_METRICS.length * (ROUTE_GROUPS.length - 1));
    const sheet = loadPriceSheet();
    const line = fixedMonthlyCosts(sheet).find((fixed) => fixed.item === 'CloudWatch custom metrics');
    expect(line).toEqual({
      item: 'CloudWatch custom metrics',
      count: customMetricCount(),
      usd: Math.round(customMetricCount() * sheet.fixed_monthly.custom_metric.usd * 100) / 100,
    });
  });
});

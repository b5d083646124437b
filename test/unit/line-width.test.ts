import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The formatter keeps code within its line width but leaves long strings and comments as they are: this holds the
 * product's own sources (not the tests, not generated types) to the same width, read from biome.json.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const WIDTH = (JSON.parse(readFileSync(`${ROOT}biome.json`, 'utf8')) as { formatter: { lineWidth: number } }).formatter.lineWidth;

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name.startsWith('.') ? [] : sourcesUnder(path);
    return /\.(ts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [relative(ROOT, path)] : [];
  });
}

const productSources = () => ['bin', 'lib', 'functions'].flatMap((folder) => sourcesUnder(join(ROOT, folder)));

function linesOver(text: string, width: number): number[] {
  return text.split('\n').flatMap((line, index) => ([...line].length > width ? [index + 1] : []));
}

describe('line width of the product sources', () => {
  it('reads the width and the sources it checks', () => {
    expect(WIDTH).toBe(140);
    expect(productSources()).toContain('functions/routes.ts');
  });

  it('finds a line one character over the width, and not one at it', () => {
    expect(linesOver(`${'x'.repeat(WIDTH)}\n${'y'.repeat(WIDTH + 1)}`, WIDTH)).toEqual([2]);
  });

  it(`has no line over ${WIDTH} characters, strings and comments included`, () => {
    const over = productSources().flatMap((path) =>
      linesOver(readFileSync(`${ROOT}${path}`, 'utf8'), WIDTH).map((line) => `${path}:${line}`),
    );
    expect(over).toEqual([]);
  });
});

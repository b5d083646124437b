import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT as ROOT, repositoryFiles } from '../support/repository-files.ts';

/**
 * The formatter keeps code within its line width but leaves long strings and comments as they are: this holds the
 * product's own sources (not the tests, not generated types) to the same width, read from biome.json.
 */
const WIDTH = (JSON.parse(readFileSync(`${ROOT}biome.json`, 'utf8')) as { formatter: { lineWidth: number } }).formatter.lineWidth;

const productSources = () => repositoryFiles(['bin', 'lib', 'functions'], /^(?!.*\.d\.ts$).*\.(ts|mjs)$/);

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

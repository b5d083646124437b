import { describe, expect, it } from 'vitest';
import { repositoryFiles } from '../support/repository-files.ts';
import { codeSpans, readRepositoryFile, section, tableRows } from '../support/markdown.ts';

/**
 * bin/README.md's table of `npm start` settings is what bin/local.ts reads: a variable it reads is listed, and a
 * listed variable is one the product reads somewhere (the twin, or the functions it passes it to).
 */
const sources = repositoryFiles(['bin', 'lib', 'functions'], /\.ts$/).map(readRepositoryFile);

/** A `*_ENV` constant's value, wherever the product declares it. */
function constantValue(name: string): string {
  for (const source of sources) {
    const found = source.match(new RegExp(`export const ${name} = '(\\w+)'`));
    if (found) return found[1]!;
  }
  throw new Error(`no constant ${name}`);
}

/** The variables bin/local.ts reads, as `process.env.NAME` or through a `process.env[NAME_ENV]` constant. */
function variablesStartReads(): string[] {
  const local = readRepositoryFile('bin/local.ts');
  const literal = [...local.matchAll(/process\.env\.([A-Z_]+)/g)].map((match) => match[1]!);
  const constants = [...local.matchAll(/process\.env\[([A-Z_]+)\]/g)].map((match) => constantValue(match[1]!));
  return [...new Set([...literal, ...constants])].sort();
}

const listed = () =>
  tableRows(section(readRepositoryFile('bin/README.md'), '`npm start` settings')).flatMap(([first]) => codeSpans(first!));

describe("bin/README.md's npm start settings", () => {
  it('list every variable bin/local.ts reads', () => {
    expect(variablesStartReads()).toEqual(expect.arrayContaining(['PORT', 'DATA_DIR', 'TWIN_FAULTS', 'MAX_OPEN_STREAMS']));
    expect(variablesStartReads().filter((name) => !listed().includes(name))).toEqual([]);
  });

  it('list only variables the product reads', () => {
    const read = (name: string) => sources.some((source) => source.includes(`'${name}'`) || source.includes(`process.env.${name}`));
    expect(listed().length).toBeGreaterThan(10);
    expect(listed().filter((name) => !read(name))).toEqual([]);
  });
});

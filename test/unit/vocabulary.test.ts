import { describe, expect, it } from 'vitest';
import { deployedTableName, TABLE_ENV, type TableName } from '#shared/resources.ts';
import { repositoryFiles } from '../support/repository-files.ts';
import { readRepositoryFile, section, tableRows } from '../support/markdown.ts';

/**
 * One word, one meaning: the README's vocabulary names every word the code uses in several senses, and every stored
 * name that keeps an older word (a table as first deployed, a `run#` key), so a reader meeting one knows which it is.
 */
const vocabulary = () => tableRows(section(readRepositoryFile('README.md'), 'Vocabulary'));
/** The first cell of each row, the words it defines. */
const words = () => vocabulary().map(([word]) => word!);
const defines = (word: string) => words().some((cell) => cell.split(/,\s*|\s+\(/).some((part) => part.replace(/`/g, '') === word));

/** Words with several meanings in this product or beside AWS's, each sense an entry of its own. */
const SENSES = [
  'execution',
  'state machine execution',
  'callback execution',
  'run',
  'step function',
  'Task state',
  'task function',
  'task token',
  'collection task',
  'sweep',
  'stream event',
  'lifecycle event',
  'inbound event',
  'conversation',
];

/** Stored attribute names and key prefixes that still say "run" (the product's sources, not the tests). */
function storedRunNames(): string[] {
  const names = new Set<string>();
  for (const file of repositoryFiles(['functions', 'lib'], /\.ts$/)) {
    for (const match of readRepositoryFile(file).matchAll(/['`](\w*_runs?|runs?_\w+|runs?#)(?:['`]|\$\{)/g)) names.add(match[1]!);
  }
  return [...names].sort();
}

describe("the README's vocabulary", () => {
  it('is a table of words and what each means', () => {
    expect(vocabulary().length).toBeGreaterThan(10);
    expect(vocabulary().every((row) => row.length === 2 && row[1]!.length > 10)).toBe(true);
  });

  it('gives each sense of a word with several meanings an entry: task, step function, execution and their kin', () => {
    expect(SENSES.filter((word) => !defines(word))).toEqual([]);
  });

  it('names each table kept under the name it was first deployed under', () => {
    const renamed = (Object.keys(TABLE_ENV) as TableName[]).map(deployedTableName).filter((name) => !(name in TABLE_ENV));
    expect(renamed).toEqual(['conversations', 'runEvents']);
    expect(renamed.filter((name) => !defines(name))).toEqual([]);
  });

  it('names every stored key prefix and attribute that still says "run"', () => {
    const stored = storedRunNames();
    expect(stored).toEqual(expect.arrayContaining(['run#', 'runs#', 'handed_run']));
    const named = words().join(' ');
    expect(stored.filter((name) => !named.includes(`\`${name}`))).toEqual([]);
  });

  it('finds an entry only where the word is defined, not where it is mentioned', () => {
    expect(defines('task')).toBe(false);
    expect(defines('workflow')).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { TABLE_DEFINITIONS } from '#lib/cdk/table-definitions.ts';
import { repositoryFiles } from '../support/repository-files.ts';
import { codeSpans, readRepositoryFile, section, tableRows } from '../support/markdown.ts';

/**
 * lib/cdk/README.md's tables restate the stack: the `-c` settings it reads, the alarms it makes, the tables it keys.
 * Each is held to the code here, so a setting, alarm or key added, renamed or dropped moves the README with it.
 */
const readme = readRepositoryFile('lib/cdk/README.md');
const rowsOf = (title: string) => tableRows(section(readme, title));
const spansOfFirstCells = (rows: string[][]) => rows.flatMap(([first]) => codeSpans(first!));

/** Every context name the CDK app reads: `tryGetContext('x')` and the stack's `numberFromContext(this, 'x')` helpers. */
function contextNamesRead(): string[] {
  const sources = ['bin/app.ts', ...repositoryFiles(['lib/cdk'], /\.ts$/)];
  const names = sources.flatMap((file) =>
    [...readRepositoryFile(file).matchAll(/(?:tryGetContext|FromContext)\(\s*(?:[\w.]+,\s*)?'(\w+)'/g)].map((match) => match[1]!),
  );
  return [...new Set(names)].sort();
}

/** The alarms `constructs/operations.ts` makes, a per-thing alarm as `Name-<...>`. */
function alarmNames(): string[] {
  const source = readRepositoryFile('lib/cdk/constructs/operations.ts');
  const names = [...source.matchAll(/this\.alarm\(\s*(['`])(\w+)(-\$\{[^}]+\})?\1/g)].map(([, , name, each]) =>
    each ? `${name}-<>` : name!,
  );
  return [...new Set(names)].sort();
}

describe('lib/cdk/README.md', () => {
  it('lists every -c setting the stack reads, and none it does not', () => {
    const listed = spansOfFirstCells(rowsOf('Settings')).sort();
    expect(contextNamesRead()).toContain('stackName');
    expect(listed).toEqual(contextNamesRead());
  });

  it('lists every alarm the operations construct makes, and none it does not', () => {
    const listed = spansOfFirstCells(rowsOf('After the deploy')).map((name) => name.replace(/-<\w+>$/, '-<>'));
    expect(alarmNames()).toContain('GatewayServerErrors');
    expect([...new Set(listed)].sort()).toEqual(alarmNames());
  });

  it('gives every table the keys table-definitions.ts declares', () => {
    const listed = Object.fromEntries(rowsOf('Data').map(([table, keys]) => [table!, codeSpans(keys!)]));
    const declared = Object.fromEntries(
      Object.entries(TABLE_DEFINITIONS).map(([table, definition]) => [
        table,
        [definition.partitionKey, ...(definition.sortKey ? [definition.sortKey] : [])],
      ]),
    );
    expect(listed).toEqual(declared);
  });
});

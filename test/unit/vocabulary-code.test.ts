import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { readRepositoryFile } from '../support/markdown.ts';
import { repositoryFiles } from '../support/repository-files.ts';

/**
 * The README's vocabulary in the code: "execution" is the noun, "run" only the verb. A type, interface, class or enum
 * with the word Run in its name names a thing, so the thing is an execution (`PlannedExecution`, not `PlannedRun`); a
 * variable, parameter or function named `run` or `runs`, ending in Run, or with Runs in it, holds executions
 * (`endExecution`, `MIN_EXECUTIONS_TO_TIME`). A name that starts with the verb (`runStep`, `runCli`) is fine.
 * Published names keep their spelling: they are listed here, each with where it is published.
 */
const PUBLISHED: Record<string, string> = {
  // The typed client's exports (lib/client/README.md): callers import them by these names.
  RunPosition: 'lib/client/published-client.ts',
  RunStreamAbortedError: 'lib/client/published-client.ts',
  StreamRunOptions: 'lib/client/published-client.ts',
  ResumeRunOptions: 'lib/client/published-client.ts',
  StreamRunResult: 'lib/client/published-client.ts',
  streamRun: 'lib/client/published-client.ts',
  resumeRun: 'lib/client/published-client.ts',
};

/** `PlannedRun` → planned run; `MIN_RUNS_TO_TIME` → min runs to time. */
const wordsOf = (name: string) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[\s_$]+/)
    .filter((word) => word !== '');

/** A type-level name with the noun in it. */
const typeSaysRun = (name: string) => wordsOf(name).some((word) => word === 'run' || word === 'runs');

/** A value's name that holds runs: `run`, `runs`, `...Run`, `...Runs...`; the verb first (`runStep`) is not one. */
function valueSaysRun(name: string): boolean {
  const words = wordsOf(name);
  return words.includes('runs') || words.at(-1) === 'run';
}

interface Offence {
  where: string;
  name: string;
}

/** The declarations in `code` whose names use "run" as the noun (`file` names them in the answer). */
function runNouns(file: string, code: string): Offence[] {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, true);
  const found: Offence[] = [];
  const note = (node: ts.Node, name: string) =>
    found.push({ where: `${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`, name });
  const visit = (node: ts.Node): void => {
    const isType =
      ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isClassDeclaration(node) || ts.isEnumDeclaration(node);
    if (isType && node.name && typeSaysRun(node.name.text)) note(node, node.name.text);
    const isValue = ts.isVariableDeclaration(node) || ts.isParameter(node) || ts.isBindingElement(node) || ts.isFunctionDeclaration(node);
    if (isValue && node.name && ts.isIdentifier(node.name) && valueSaysRun(node.name.text)) note(node, node.name.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const productFiles = () => repositoryFiles(['bin', 'lib', 'functions'], /\.ts$/);

describe('the code follows the vocabulary: "run" is only a verb', () => {
  it('reads the product sources', () => {
    expect(productFiles().length).toBeGreaterThan(100);
  });

  it('names no type, class, variable, parameter or function after a run, except published names', () => {
    const offences = productFiles()
      .flatMap((file) => runNouns(file, readRepositoryFile(file)).filter(({ name }) => PUBLISHED[name] !== file))
      .map(({ where, name }) => `${where} ${name}`);
    expect(offences).toEqual([]);
  });

  it('lists only published names that still exist where it says', () => {
    const missing = Object.entries(PUBLISHED).filter(
      ([name, file]) => !runNouns(file, readRepositoryFile(file)).some((o) => o.name === name),
    );
    expect(missing).toEqual([]);
  });

  it('catches the noun and lets the verb through', () => {
    const code = [
      'interface PlannedRun {}',
      'type RunCost = number;',
      'class RunStreamError {}',
      'const finishedRuns = [];',
      'const MIN_RUNS_TO_TIME = 3;',
      'function endRun(run: string) {}',
      'const { runs } = report;',
      'function runStep() {}',
      'const runCli = () => 0;',
      'interface ExecutionCost { runs: number }',
    ].join('\n');
    expect(runNouns('sample.ts', code).map(({ name }) => name)).toEqual([
      'PlannedRun',
      'RunCost',
      'RunStreamError',
      'finishedRuns',
      'MIN_RUNS_TO_TIME',
      'endRun',
      'run',
      'runs',
    ]);
  });
});

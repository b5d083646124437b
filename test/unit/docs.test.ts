import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT as ROOT, repositoryFiles } from '../support/repository-files.ts';
import {
  codeSpans,
  headingAnchors,
  markdownFiles,
  readRepositoryFile,
  section,
  tableRows,
  TOP_LEVEL_FOLDERS,
  withoutFences,
} from '../support/markdown.ts';

/**
 * Docs a test keeps true: a path a README names exists, a link's anchor is a heading of its page, a table row fits in
 * a diff, and all the Markdown together stays readable in an afternoon.
 */
const WORD_BUDGET = 25_000;
/** Words per page for the pages a newcomer reads first; the rest share what the total leaves. */
const PAGE_WORD_BUDGETS: Record<string, number> = {
  'README.md': 1_800,
  'lib/cdk/README.md': 2_000,
  'lib/pricing/README.md': 2_500,
  'lib/admin/README.md': 1_300,
  'test/README.md': 1_500,
};
const README_LINES = 150;
/** A table row longer than this wraps in a diff until the change in it cannot be seen. */
const TABLE_ROW_CHARACTERS = 200;

const SOURCE_EXTENSION = /\.(?:ts|mjs|cjs|md|json|ya?ml|sh)$/;
/** A bare file name is checked when it is a source or a page; a bundle's `index.mjs` is no file of the repository. */
const BARE_SOURCE = /^[\w.-]+\.(?:ts|md)$/;
/** What a path a reader follows never holds: placeholders, globs, variables, URLs, several paths at once. */
const NOT_A_PATH = /[<>$*{}\s|,=()[\]…'"]|:\/\/|^[/#@~-]/;
const IGNORED_ROOTS = new Set(['node_modules', '.local', 'cdk.out', 'coverage', '.git']);

const allBasenames = new Set(
  [...TOP_LEVEL_FOLDERS.flatMap((folder) => repositoryFiles([folder], /./)), ...readdirSync(ROOT)].map((file) => basename(file)),
);

/** The folders a path written in `page` may be relative to: its own and every one above it, up to the root. */
function ancestors(page: string): string[] {
  const folders: string[] = [];
  for (let folder = dirname(page); ; folder = dirname(folder)) {
    folders.push(folder);
    if (folder === '.') return folders;
  }
}

/** Why the code span `span` of `page` names no file of the repository, or undefined when it names one or no path. */
function brokenCodePath(page: string, span: string): string | undefined {
  const path = span.replace(/:\d+(?::\d+)?$/, '').replace(/#[\w-]*$/, '');
  if (!path || NOT_A_PATH.test(path) || /\.\w+\.\w+\//.test(path)) return undefined;
  if (!path.includes('/')) {
    if (!BARE_SOURCE.test(path) || allBasenames.has(path)) return undefined;
    return `${page}: \`${span}\` is no file of the repository`;
  }
  const first = path.split('/')[0]!;
  if (IGNORED_ROOTS.has(first)) return undefined;
  if (first === '.' || first === '..') {
    // `../docs` may be a relative URL; a relative path to a source names its extension.
    if (!SOURCE_EXTENSION.test(path)) return undefined;
    return existsSync(join(ROOT, dirname(page), path)) ? undefined : `${page}: \`${span}\` does not exist beside it`;
  }
  if (!SOURCE_EXTENSION.test(path) && !TOP_LEVEL_FOLDERS.includes(first)) return undefined;
  if (ancestors(page).some((folder) => existsSync(join(ROOT, folder, path)))) return undefined;
  return `${page}: \`${span}\` exists neither from the root nor from its folder or one above it`;
}

const anchorsOf = new Map<string, Set<string>>();
const anchors = (page: string) => {
  if (!anchorsOf.has(page)) anchorsOf.set(page, headingAnchors(readRepositoryFile(page)));
  return anchorsOf.get(page)!;
};

/** Why a link `target` (relative to `page`, as GitHub resolves it) leads nowhere, or undefined when it arrives. */
function brokenLink(page: string, target: string): string | undefined {
  if (/^[a-z][\w+.-]*:/i.test(target)) return undefined;
  const [path, anchor] = target.split('#') as [string, string | undefined];
  const file = path ? normalize(join(dirname(page), path)) : page;
  if (!existsSync(join(ROOT, file))) return `${page}: link (${target}) leads to no file`;
  if (anchor === undefined || !file.endsWith('.md')) return undefined;
  return anchors(file).has(anchor) ? undefined : `${page}: link (${target}) names no heading of ${file}`;
}

/** This file, whose examples are links that lead nowhere on purpose. */
const SELF = fileURLToPath(import.meta.url);
const linkTargets = (text: string) => [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
const pages = markdownFiles();
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

describe('the paths the Markdown names', () => {
  it('reads every page, this one included', () => {
    expect(pages).toContain('README.md');
    expect(pages).toContain('test/README.md');
    expect(pages.length).toBeGreaterThan(40);
  });

  it('exist: every code span that names a repository path', () => {
    const broken = pages.flatMap((page) =>
      codeSpans(withoutFences(readRepositoryFile(page))).flatMap((span) => brokenCodePath(page, span) ?? []),
    );
    expect(broken).toEqual([]);
  });

  it('exist: every link, and the heading its anchor names', () => {
    const broken = pages.flatMap((page) =>
      linkTargets(withoutFences(readRepositoryFile(page))).flatMap((target) => brokenLink(page, target) ?? []),
    );
    expect(broken).toEqual([]);
  });

  it('exist: every page and heading a source cites (`functions/inbound/README.md#the-contract-in-brief`)', () => {
    const sources = repositoryFiles(['bin', 'lib', 'functions', 'statemachines', 'test'], /\.(?:[cm]?ts|json)$/).filter(
      (source) => join(ROOT, source) !== SELF,
    );
    const broken = sources.flatMap((source) =>
      [...readRepositoryFile(source).matchAll(/\b((?:bin|lib|functions|statemachines|test)\/[\w./-]*\.md)(#[\w-]+)?/g)].flatMap(
        ([, page, anchor]) => {
          const problem = brokenLink('README.md', `${page}${anchor ?? ''}`);
          return problem ? [`${source}: ${problem.replace(/^README\.md: /, '')}`] : [];
        },
      ),
    );
    expect(broken).toEqual([]);
  });

  it('are told apart from what only looks like one, and a missing one is caught', () => {
    for (const [page, span] of [
      ['lib/twin/lambda/README.md', 'metering/cost-meter.ts'],
      ['README.md', 'lib/twin/missing.ts'],
      ['lib/twin/README.md', 'local-step-functions.test.ts'],
      ['lib/cdk/bundling/README.md', '../missing.ts'],
    ] as const) {
      expect(brokenCodePath(page, span), span).toBeDefined();
    }
    for (const [page, span] of [
      ['functions/shared/clients/README.md', 'store/conditional-write.ts'],
      ['lib/cdk/README.md', 'constructs/operations.ts'],
      ['README.md', 'functions/routes.ts:12'],
      ['lib/cdk/bundling/README.md', '../lambda-runtime.ts'],
      ['README.md', 'handoff/<source_id>/<event_id>.json'],
      ['README.md', '.local/data'],
      ['README.md', '/api/v1/published/openapi.json'],
      ['README.md', 'index.mjs'],
      ['README.md', 'amazon.nova-lite-v1:0'],
      ['README.md', 'eu.amazon.nova-lite-v1:0'],
      ['README.md', 'recordings/'],
      ['functions/published/README.md', '../docs'],
    ] as const) {
      expect(brokenCodePath(page, span), span).toBeUndefined();
    }
    expect(brokenLink('README.md', 'lib/twin/README.md#no-such-heading')).toBeDefined();
    expect(brokenLink('README.md', 'lib/twin/MISSING.md')).toBeDefined();
    expect(brokenLink('README.md', 'https://docs.aws.amazon.com/lambda/')).toBeUndefined();
  });
});

describe("functions/shared/README.md's limits", () => {
  it('name constants that functions/shared/limits.ts exports', () => {
    const limits = readRepositoryFile('functions/shared/limits.ts');
    const named = tableRows(section(readRepositoryFile('functions/shared/README.md'), 'Limits')).flatMap(([, constant]) =>
      codeSpans(constant!),
    );
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter((name) => !new RegExp(`^export const ${name} =`, 'm').test(limits))).toEqual([]);
  });
});

describe('the test tree as test/README.md lists it', () => {
  it('names every folder of test/', () => {
    const text = readRepositoryFile('test/README.md');
    const folders = readdirSync(join(ROOT, 'test'), { withFileTypes: true }).filter((entry) => entry.isDirectory());
    expect(folders.length).toBeGreaterThan(5);
    expect(folders.map(({ name }) => `test/${name}/`).filter((folder) => !text.includes(`\`${folder}\``))).toEqual([]);
  });
});

describe('the size of the Markdown', () => {
  it(`has no table row over ${TABLE_ROW_CHARACTERS} characters`, () => {
    const long = pages.flatMap((page) =>
      readRepositoryFile(page)
        .split('\n')
        .flatMap((line, index) =>
          line.startsWith('|') && [...line].length > TABLE_ROW_CHARACTERS ? [`${page}:${index + 1}: ${[...line].length}`] : [],
        ),
    );
    expect(long).toEqual([]);
  });

  it(`keeps README.md to ${README_LINES} lines, a front door read in ten minutes`, () => {
    expect(readRepositoryFile('README.md').trimEnd().split('\n').length).toBeLessThanOrEqual(README_LINES);
  });

  it('keeps each first-read page within its word budget', () => {
    const over = Object.entries(PAGE_WORD_BUDGETS).flatMap(([page, budget]) => {
      const count = words(readRepositoryFile(page));
      return count > budget ? [`${page}: ${count} words, budget ${budget}`] : [];
    });
    expect(over).toEqual([]);
  });

  it(`keeps all the Markdown together within ${WORD_BUDGET.toLocaleString('en')} words`, () => {
    const total = pages.reduce((sum, page) => sum + words(readRepositoryFile(page)), 0);
    const largest = pages
      .map((page) => `${page} ${words(readRepositoryFile(page))}`)
      .sort((a, b) => Number(b.split(' ')[1]) - Number(a.split(' ')[1]))
      .slice(0, 5);
    expect(total, `largest: ${largest.join(', ')}`).toBeLessThanOrEqual(WORD_BUDGET);
  });
});

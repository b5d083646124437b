import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPOSITORY_ROOT, repositoryFiles } from './repository-files.ts';

/** What .gitignore keeps out of the repository (build output, local data), by top-level name. */
const IGNORED = new Set(
  readFileSync(join(REPOSITORY_ROOT, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim().replace(/\/$/, ''))
    .filter((line) => /^[\w.-]+$/.test(line)),
);

/** The repository's top-level folders, as a reader of a path like `lib/...` takes them. */
export const TOP_LEVEL_FOLDERS = readdirSync(REPOSITORY_ROOT, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && !IGNORED.has(entry.name) && entry.name !== 'node_modules')
  .map((entry) => entry.name);

/** Every Markdown file of the repository, relative to its root, a file added a minute ago included. */
export function markdownFiles(): string[] {
  const atRoot = readdirSync(REPOSITORY_ROOT).filter((name) => name.endsWith('.md'));
  return [...atRoot, ...repositoryFiles(TOP_LEVEL_FOLDERS, /\.md$/)];
}

export const readRepositoryFile = (path: string): string => readFileSync(join(REPOSITORY_ROOT, path), 'utf8');

/** The text without its fenced code blocks, whose lines are commands and output rather than prose. */
export const withoutFences = (text: string): string => text.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, '');

/** From a `## ` heading that starts with `title` to the next heading of that level or higher. */
export function section(text: string, title: string): string {
  const start = text.search(new RegExp(`^## ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'));
  if (start < 0) throw new Error(`no section "## ${title}"`);
  const next = text.slice(start + 3).search(/^#{1,2} /m);
  return next < 0 ? text.slice(start) : text.slice(start, start + 3 + next);
}

/** The body rows of every table in `text` (the lines after a `|---|` separator), each as its trimmed cells. */
export function tableRows(text: string): string[][] {
  const lines = text.split('\n');
  const rows: string[][] = [];
  lines.forEach((line, index) => {
    if (!/^\|[\s|:-]+\|$/.test(line)) return;
    for (let next = index + 1; lines[next]?.startsWith('|'); next++) rows.push(cells(lines[next]!));
  });
  return rows;
}

/** A row's cells, trimmed; `\|` inside a cell is a `|` of its text. */
const cells = (row: string): string[] =>
  row
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.replace(/\\\|/g, '|').trim());

/** The code spans of a piece of Markdown. */
export const codeSpans = (text: string): string[] => [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
export function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of withoutFences(text).matchAll(/^#{1,6}\s+(.+?)\s*$/gm)) {
    const slug = match[1]!
      .replace(/`/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count ? `${slug}-${count}` : slug);
  }
  for (const match of text.matchAll(/<a id="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

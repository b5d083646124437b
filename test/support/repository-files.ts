import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root folder, as the tests that read its files see it. */
export const REPOSITORY_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The files under `folders` (relative to the repository root) whose names match `name`, tracked or not, leaving out
 * node_modules and dot folders: what a rule over the sources must hold for, a file added a minute ago included.
 */
export function repositoryFiles(folders: readonly string[], name: RegExp): string[] {
  const under = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name.startsWith('.') ? [] : under(path);
      return name.test(entry.name) ? [relative(REPOSITORY_ROOT, path)] : [];
    });
  return folders.flatMap((folder) => under(join(REPOSITORY_ROOT, folder)));
}

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createPublicationsRepository } from '#workflows/publications-repository.ts';
import { parseDefinition } from '#workflows/definition-validation.ts';
import { publish, unpublish } from '#workflows/publication-service.ts';
import type { WorkflowDefinition } from '#workflows/definition-schema.ts';
import { PROJECT_ID_PATTERN } from '#shared/limits.ts';
import { optionalFlag } from '#shared/config.ts';
import type { AdminTarget } from './target.ts';
import { requireArgument, UsageError } from './usage-error.ts';

export const PUBLICATION_USAGE = `publish <file.json|directory> [--project P]
unpublish [--project P]`;

export const DEFAULT_PROJECT = 'default';

/** `--project`: part of partition keys (`project#<id>`, memory and history keys), so it is bounded here. */
export function projectOption(flag: string | undefined): string {
  if (flag === undefined) return DEFAULT_PROJECT;
  if (!PROJECT_ID_PATTERN.test(flag)) throw new UsageError('--project must be 1-64 letters, digits, ".", "_" or "-"');
  return flag;
}

/** A file, or every *.json file of a directory: each holds one workflow definition. */
function readDefinitions(path: string): WorkflowDefinition[] {
  let files: string[];
  try {
    files = statSync(path).isDirectory()
      ? readdirSync(path).filter((name) => name.endsWith('.json')).sort().map((name) => join(path, name))
      : [path];
  } catch {
    throw new UsageError(`cannot read ${path}`);
  }
  return files.map((file) => {
    let document: unknown;
    try {
      document = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new UsageError(`${basename(file)} is not valid JSON: ${(error as Error).message}`);
    }
    // Test-only, as ALLOW_LOOPBACK_CALLBACKS: tool URLs on a loopback host pass publish.
    return parseDefinition(document, basename(file), { allowLoopbackTools: optionalFlag('ALLOW_LOOPBACK_TOOLS') });
  });
}

export async function runPublicationCommand(target: AdminTarget, verb: string, args: string[], flags: { project?: string }) {
  const deps = { publications: createPublicationsRepository(target.dynamo, target.tables.publications), now: Date.now };
  const projectId = projectOption(flags.project);
  if (verb === 'unpublish') return unpublish(deps, projectId);
  return publish(deps, projectId, readDefinitions(requireArgument(args[0], 'publish', 'file-or-directory')));
}

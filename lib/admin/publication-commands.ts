import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createPublicationsRepository } from '#workflows/publications-repository.ts';
import { definitionWarnings, parseDefinition } from '#workflows/definition-validation.ts';
import { publish, unpublish } from '#workflows/publication-service.ts';
import type { WorkflowDefinition } from '#workflows/definition-schema.ts';
import { PROJECT_ID_PATTERN } from '#shared/limits.ts';
import { optionalFlag } from '#shared/config.ts';
import type { AdminTarget } from './target.ts';
import { requireArgument, UsageError } from './usage-error.ts';

export const DEFAULT_PROJECT = 'default';

/** `--project`: part of partition keys (`project#<id>`, memory and history keys), so it is bounded here. */
export function projectOption(flag: string | undefined): string {
  if (flag === undefined) return DEFAULT_PROJECT;
  if (!PROJECT_ID_PATTERN.test(flag)) throw new UsageError('--project must be 1-64 letters, digits, ".", "_" or "-"');
  return flag;
}

/** A file, or every *.json file of a directory: each holds one workflow definition, with what to warn about it. */
function readDefinitions(path: string, now: number): { definitions: WorkflowDefinition[]; warnings: string[] } {
  let files: string[];
  try {
    files = statSync(path).isDirectory()
      ? readdirSync(path)
          .filter((name) => name.endsWith('.json'))
          .sort()
          .map((name) => join(path, name))
      : [path];
  } catch {
    throw new UsageError(`cannot read ${path}`);
  }
  const warnings: string[] = [];
  const definitions = files.map((file) => {
    let document: unknown;
    try {
      document = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new UsageError(`${basename(file)} is not valid JSON: ${(error as Error).message}`);
    }
    // Test-only, as ALLOW_LOOPBACK_CALLBACKS: tool URLs on a loopback host pass publish.
    const definition = parseDefinition(document, basename(file), { allowLoopbackTools: optionalFlag('ALLOW_LOOPBACK_TOOLS'), now });
    warnings.push(...definitionWarnings(definition, basename(file), now).map((issue) => `${issue.field}: ${issue.message}`));
    return definition;
  });
  return { definitions, warnings };
}

export async function runPublicationCommand(
  target: AdminTarget,
  verb: string,
  args: string[],
  flags: { project?: string },
  now: () => number,
) {
  const deps = { publications: createPublicationsRepository(target.dynamo, target.tables.publications), now };
  const projectId = projectOption(flags.project);
  if (verb === 'unpublish') return unpublish(deps, projectId);
  const { definitions, warnings } = readDefinitions(requireArgument(args[0], 'publish', 'file-or-directory'), deps.now());
  const published = await publish(deps, projectId, definitions);
  return warnings.length > 0 ? { ...published, warnings } : published;
}

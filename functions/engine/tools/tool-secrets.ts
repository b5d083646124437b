import { MAX_SECRETS_PER_TOOL } from '#shared/limits.ts';
import { SECRET_PLACEHOLDER, secretNamesIn } from '#workflows/tool-references.ts';
import { secretMasker, type SecretMasker } from './secret-masking.ts';
import type { SecretSource } from './tool-types.ts';

export function fillSecrets(template: string, values: ReadonlyMap<string, string>): string {
  return template.replace(SECRET_PLACEHOLDER, (_, name: string) => values.get(name) ?? '');
}

export class MissingSecretError extends Error {
  constructor(readonly names: readonly string[]) {
    super(`secret ${names.join(', ')} is not set for this project`);
    this.name = 'MissingSecretError';
  }
}

/**
 * One agent's view of its project's secrets: each name is read once (SSM is billed per call), and every value read
 * is masked, in every form a server could echo it in (see secretMasker), wherever text leaves a tool call (its
 * result, its error), so a server echoing a header cannot put the secret into an event, a record, a model or a log.
 */
export function secretScope(source: SecretSource, projectId: string) {
  const known = new Map<string, string>();
  let masker: SecretMasker | undefined;
  const current = () => (masker ??= secretMasker(known.values()));
  return {
    async resolve(templates: readonly string[]): Promise<ReadonlyMap<string, string>> {
      const names = secretNamesIn(templates);
      const unread = names.filter((name) => !known.has(name));
      if (unread.length > MAX_SECRETS_PER_TOOL) throw new Error(`a tool uses at most ${MAX_SECRETS_PER_TOOL} secrets`);
      if (unread.length > 0) {
        for (const [name, value] of await source.values(projectId, unread)) known.set(name, value);
        masker = undefined;
      }
      const missing = names.filter((name) => !known.has(name));
      if (missing.length > 0) throw new MissingSecretError(missing);
      return known;
    },
    /** See SecretMasker.text. */
    mask: (text: string, end?: number): string => current().text(text, end),
    /** Every string of a parsed answer, keys too, at any depth. */
    maskValue: (value: unknown): unknown => current().value(value),
    /** How far past a cut a secret read so far can run in its longest form (UTF-16 units). */
    longestForm: (): number => current().longest,
  };
}

export type SecretScope = ReturnType<typeof secretScope>;

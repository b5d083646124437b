import { createApiKeysRepository } from '#published/api-keys-repository.ts';
import { createKey, listKeys, revokeKey, rotateKey, type ApiKeysDeps } from '#published/api-keys-service.ts';
import { PRESETS, scopeSchema, type GrantedScope } from '#published/api-key-model.ts';
import { createCounterStore } from '#shared/store/counter-store.ts';
import { parseIsoWithOffset } from '#inbound/iso-timestamp.ts';
import { MAX_OPEN_STREAMS_LIMIT } from '#shared/limits.ts';
import { workflowShape } from '#workflows/definition-schema.ts';
import { projectOption } from './publication-commands.ts';
import type { AdminTarget } from './target.ts';
import { requireId, UsageError } from './usage-error.ts';

interface KeyFlags {
  name?: string;
  preset?: string;
  scopes?: string;
  expires?: string;
  project?: string;
  'max-open-streams'?: string;
}

function scopesOf(flags: KeyFlags): GrantedScope[] {
  if (flags.preset && flags.scopes) throw new UsageError('give --preset or --scopes, not both');
  if (flags.preset) {
    // Own keys only: `--preset constructor` is an unknown preset, not Object.prototype.constructor.
    const preset = Object.hasOwn(PRESETS, flags.preset) ? PRESETS[flags.preset as keyof typeof PRESETS] : undefined;
    if (!preset) throw new UsageError(`unknown preset ${flags.preset}; use read, execute or full`);
    return preset;
  }
  if (!flags.scopes) throw new UsageError('keys create needs --preset or --scopes');
  return flags.scopes.split(',').map((scope) => {
    const parsed = scopeSchema.safeParse(scope.trim());
    if (!parsed.success) throw new UsageError(`unknown scope ${scope.trim()}`);
    return parsed.data;
  });
}

/**
 * A key's name is a label for people, bounded as a workflow's name is (its schema's rule, so the two never differ),
 * and printed by `keys list`: control characters (a newline, ESC starting a terminal sequence) are refused.
 */
function nameOf(flags: KeyFlags): string {
  if (!flags.name) throw new UsageError('keys create needs --name');
  const tooLong = workflowShape.shape.name.safeParse(flags.name).error?.issues.find((issue) => issue.code === 'too_big');
  if (tooLong)
    throw new UsageError(
      `--name is ${flags.name.length.toLocaleString('en-US')} characters; a key name is at most ${String(tooLong.maximum)}, as a ` +
        `workflow name`,
    );
  if (/\p{Cc}/u.test(flags.name))
    throw new UsageError('--name must not contain control characters (newline, tab, ESC, ...): keys list shows it as written');
  return flags.name;
}

function expiryOf(flags: KeyFlags, now: number): string | null {
  if (flags.expires === undefined) return null;
  // An explicit offset (or Z) is required, so an expiry never depends on the operator's time zone; a day the month
  // does not have (2027-02-30) is refused rather than rolled over into the next month, as Date.parse would.
  const time = parseIsoWithOffset(flags.expires);
  if (time === undefined) throw new UsageError('--expires must be an ISO 8601 time with an offset, e.g. 2027-01-31T00:00:00Z');
  // A key counts as expired from its expiry on (api-keys-service isExpired): such a key could never authenticate.
  if (time <= now) {
    throw new UsageError(
      `--expires ${flags.expires} is not in the future (now is ${new Date(now).toISOString()}): the key would be expired as soon as ` +
        `it is created`,
    );
  }
  return new Date(time).toISOString();
}

/** `--max-open-streams N`: how many streams the key may hold open at once, a whole number up to the deployment's largest. */
function maxOpenStreamsOf(flags: KeyFlags): number | undefined {
  const given = flags['max-open-streams'];
  if (given === undefined) return undefined;
  const streams = /^\d{1,9}$/.test(given.trim()) ? Number(given.trim()) : Number.NaN;
  if (!Number.isInteger(streams) || streams < 1 || streams > MAX_OPEN_STREAMS_LIMIT) {
    throw new UsageError(
      `--max-open-streams must be a whole number of streams from 1 to ${MAX_OPEN_STREAMS_LIMIT.toLocaleString('en-US')}, got ${given}`,
    );
  }
  return streams;
}

export async function runKeysCommand(target: AdminTarget, args: string[], flags: KeyFlags, now: () => number) {
  const deps: ApiKeysDeps = {
    keys: createApiKeysRepository(target.dynamo, target.tables.apiKeys),
    counters: createCounterStore(target.dynamo, target.tables.counters),
    now,
  };
  const [verb, keyId] = args;
  const requireKeyId = () => requireId(keyId, `keys ${verb}`, 'key_id');
  switch (verb) {
    case 'create':
      return createKey(deps, {
        name: nameOf(flags),
        projectId: projectOption(flags.project),
        scopes: scopesOf(flags),
        expiresAt: expiryOf(flags, deps.now()),
        maxOpenStreams: maxOpenStreamsOf(flags),
      });
    case 'rotate':
      return rotateKey(deps, requireKeyId());
    case 'revoke':
      return revokeKey(deps, requireKeyId());
    case 'list':
      return listKeys(deps, flags.project === undefined ? undefined : projectOption(flags.project));
    default:
      throw new UsageError(`unknown keys command ${verb ?? '(none)'}`);
  }
}

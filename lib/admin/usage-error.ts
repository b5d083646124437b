/** A mistake in how the CLI was called, as opposed to a refusal by the product. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A positional argument a command cannot do without, e.g. `links bind <link_id>`. */
export function requireArgument(value: string | undefined, command: string, name: string): string {
  if (!value) throw new UsageError(`${command} needs a <${name}>`);
  return value;
}

/** Ids the service makes (`lnk_…`, `key_…`); the same shape bounds them, so no argument reaches a DynamoDB key unchecked. */
const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A positional id argument: missing or not shaped like any id the service makes is a usage mistake. */
export function requireId(value: string | undefined, command: string, name: string): string {
  const id = requireArgument(value, command, name);
  if (!ID_PATTERN.test(id)) {
    const shown = id.length > 40 ? `${id.slice(0, 40)}…` : id;
    throw new UsageError(`${command}: ${JSON.stringify(shown)} is not a ${name} (1-64 letters, digits, _ or -)`);
  }
  return id;
}

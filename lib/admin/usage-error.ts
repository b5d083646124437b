/** A mistake in how the CLI was called, as opposed to a refusal by the product. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A positional argument a command cannot do without, e.g. `links bind <link_id>`. */
export function requireArgument(value: string | undefined, command: string, name: string): string {
  if (!value) throw new UsageError(`${command} needs a <${name}>`);
  return value;
}

/** A mistake in how the CLI was called, as opposed to a refusal by the product. */
export class UsageError extends Error {
  override name = 'UsageError';
}

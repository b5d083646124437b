import { afterAll, afterEach } from 'vitest';

/**
 * What the OpenAPI check finds wrong after the promise a test awaits has settled: an event of a stream read in the
 * background, a body that ends after its head was handed over. Each is also thrown where it can be (a stream's
 * `waitFor` and `ended`); here it fails the test that was running, and the file, even when nobody awaited it.
 */
const found: Error[] = [];

export function reportViolation(error: Error): void {
  found.push(error);
}

function failOnViolations(): void {
  const errors = found.splice(0);
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1)
    throw new AggregateError(
      errors,
      `${errors.length} answers the OpenAPI documents do not describe:\n${errors.map((error) => error.message).join('\n')}`,
    );
}

// Benchmarks (test/bench) use the same helpers outside vitest, where there is no test to fail.
if (process.env.VITEST) {
  afterEach(failOnViolations);
  afterAll(failOnViolations);
}

import { describe, expect, it } from 'vitest';
import { concurrencyCheck, LAMBDA_UNRESERVED_FLOOR } from '#lib/admin/verify-account.ts';
import type { VerifyContext } from '#lib/admin/verify-check.ts';

/**
 * `admin verify`'s concurrency row against GetAccountSettings answers. Lambda refuses a reservation that would leave
 * less than 100 of the account's concurrency unreserved ("You can reserve up to the Unreserved account concurrency
 * value that is shown, minus 100 for functions that don't have reserved concurrency",
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html), so `-c stepReservedConcurrency=N`
 * fails the deploy on an account without N + 100 to spare; new accounts have 10 in all.
 */
function contextAnswering(
  accountLimit: { ConcurrentExecutions?: number; UnreservedConcurrentExecutions?: number },
  maxOpenStreams?: number,
): VerifyContext {
  const lambda = { send: () => Promise.resolve({ AccountLimit: accountLimit }) };
  return { services: { lambda, maxOpenStreams }, signal: new AbortController().signal } as unknown as VerifyContext;
}

const run = (limit: number, unreserved: number, maxOpenStreams?: number) =>
  concurrencyCheck.run(contextAnswering({ ConcurrentExecutions: limit, UnreservedConcurrentExecutions: unreserved }, maxOpenStreams));

describe('admin verify: the concurrency row', () => {
  it('keeps 100 unreserved, as Lambda does', () => {
    expect(LAMBDA_UNRESERVED_FLOOR).toBe(100);
  });

  it('tells a new account (10 in all) that any stepReservedConcurrency fails the deploy', async () => {
    const outcome = await run(10, 10);

    expect(outcome).toMatchObject({ status: 'warn', account_limit: 10, unreserved: 10, reserved: 0, reservable: 0 });
    expect(outcome.detail).toContain('--quota-code L-B99A9384');
    expect(outcome.detail).toContain('-c stepReservedConcurrency fails the deploy beyond what the step function reserves now');
  });

  it("reports the account's limit, what functions reserve, and how much more a deploy may reserve", async () => {
    const outcome = await run(1000, 950, 400);

    expect(outcome).toMatchObject({ status: 'pass', account_limit: 1000, unreserved: 950, reserved: 50, reservable: 850 });
    expect(outcome.detail).toBe(
      '950 unreserved of 1000 concurrent Lambda executions: open streams may hold up to 400 (-c maxOpenStreams; each one to the end ' +
        'of its window), leaving 550 to ingest, the engine and the collection; 50 reserved by functions of the account; ' +
        '-c stepReservedConcurrency may reserve up to 850 more than the step function reserves now (Lambda keeps 100 unreserved)',
    );
  });

  it('passes the default 500 open streams on a default account: they leave half of its 1,000', async () => {
    expect(await run(1000, 1000, 500)).toMatchObject({ status: 'pass', max_open_streams: 500, left_for_the_rest: 500 });
  });

  it('warns when open streams could take more than half of the unreserved concurrency, naming a setting that would not', async () => {
    const outcome = await run(1000, 950, 500);

    expect(outcome).toMatchObject({ status: 'warn', max_open_streams: 500, left_for_the_rest: 450 });
    expect(outcome.detail).toMatch(/^expected open streams to leave at least half of the 950 unreserved .+ leaving 450 to ingest/);
    expect(outcome.detail).toContain('cdk deploy -c maxOpenStreams=475');
  });

  it('tells a new account (10 in all) what the streams would leave it, beside its quota', async () => {
    const outcome = await run(10, 10, 500);

    expect(outcome).toMatchObject({ status: 'warn', max_open_streams: 500, left_for_the_rest: 0 });
    expect(outcome.detail).toContain('open streams may hold up to 500');
    expect(outcome.detail).toContain('leaving 0 to ingest, the engine and the collection');
  });

  it('allows nothing more to reserve at exactly 100 unreserved, and passes streams that leave half of it', async () => {
    expect(await run(1000, 100, 50)).toMatchObject({ status: 'pass', reserved: 900, reservable: 0 });
  });

  it('says the figure is unknown when Lambda answers no unreserved count', async () => {
    const outcome = await concurrencyCheck.run(contextAnswering({ ConcurrentExecutions: 1000 }));

    expect(outcome).toMatchObject({ status: 'warn', account_limit: 1000, unreserved: null, reserved: null, reservable: null });
    expect(outcome.detail).toContain('how much -c stepReservedConcurrency may reserve is unknown');
  });
});

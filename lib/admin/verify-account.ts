import { MIN_UNRESERVED_CONCURRENCY, type CheckOutcome, type VerifyCheck } from './verify-check.ts';

/** The stack's cost allocation tag (lib/cdk/stack.ts tags every resource `Project`); the budget counts by it. */
const COST_TAG_KEY = 'Project';

const ACTIVATE_TAG = `aws ce update-cost-allocation-tags-status --cost-allocation-tags-status TagKey=${COST_TAG_KEY},Status=Active`;
/** Lambda's "Concurrent executions" quota in Service Quotas. */
const CONCURRENCY_QUOTA =
  'aws service-quotas request-service-quota-increase --service-code lambda --quota-code L-B99A9384 --desired-value 1000';

const refusalText = (error: unknown) => `${(error as Error).name}: ${(error as Error).message}`;

/**
 * `cost-tag` (a warning at worst): whether the user-defined `Project` tag is an active cost allocation tag, without
 * which the budget sees none of the stack's spend, model calls included (Cost Explorer ListCostAllocationTags).
 */
export const costTagCheck: VerifyCheck = {
  name: 'cost-tag',
  async run(context): Promise<CheckOutcome> {
    const { ListCostAllocationTagsCommand } = await import('@aws-sdk/client-cost-explorer');
    let tag: { Status?: string; LastUpdatedDate?: string } | undefined;
    try {
      const answer = await context.services.costExplorer.send(
        new ListCostAllocationTagsCommand({ TagKeys: [COST_TAG_KEY], Type: 'UserDefined' }),
        { abortSignal: context.signal },
      );
      tag = answer.CostAllocationTags?.find((entry) => entry.TagKey === COST_TAG_KEY);
    } catch (error) {
      if (context.signal.aborted) throw context.signal.reason;
      return {
        status: 'warn',
        detail:
          `expected Cost Explorer to list the ${COST_TAG_KEY} cost allocation tag; got ${refusalText(error)} -> run verify with ` +
          `credentials allowed ce:ListCostAllocationTags (of the payer account), or check the tag in Billing and Cost Management, Cost ` +
          `allocation tags`,
        tag_status: null,
      };
    }
    if (tag?.Status === 'Active') {
      return {
        status: 'pass',
        detail:
          `the ${COST_TAG_KEY} tag is an active cost allocation tag${tag.LastUpdatedDate ? ` (since ${tag.LastUpdatedDate})` : ''}: ` +
          `the budget counts the stack's spend`,
        tag_status: 'Active',
      };
    }
    if (!tag) {
      return {
        status: 'warn',
        detail:
          `expected the ${COST_TAG_KEY} tag among the account's cost allocation tags; it is not listed yet (it appears up to 24 h ` +
          `after the first deploy) -> then activate it once per payer account: ${ACTIVATE_TAG}`,
        tag_status: null,
      };
    }
    return {
      status: 'warn',
      detail:
        `expected the ${COST_TAG_KEY} cost allocation tag to be Active; it is ${tag.Status ?? 'without a status'}, so the budget sees ` +
        `none of the stack's spend -> ${ACTIVATE_TAG} (counts from activation on, up to 24 h later; aws ce ` +
        `start-cost-allocation-tag-backfill for earlier months)`,
      tag_status: tag.Status ?? null,
    };
  },
};

/**
 * `concurrency` (a warning at worst): the account's Lambda concurrency (GetAccountSettings) against what open streams
 * may take: each holds one concurrent execution to the end of its window (Lambda serves it on when its caller leaves),
 * and the deployment serves at most its `-c maxOpenStreams` at once. What they leave of the unreserved concurrency is
 * what ingest, the engine and the collection can count on; the check wants it to be at least half.
 */
export const concurrencyCheck: VerifyCheck = {
  name: 'concurrency',
  async run(context): Promise<CheckOutcome> {
    const { GetAccountSettingsCommand } = await import('@aws-sdk/client-lambda');
    const maxOpenStreams = context.services.maxOpenStreams ?? null;
    let limit: number | undefined;
    let unreserved: number | undefined;
    try {
      const { AccountLimit } = await context.services.lambda.send(new GetAccountSettingsCommand({}), { abortSignal: context.signal });
      limit = AccountLimit?.ConcurrentExecutions;
      unreserved = AccountLimit?.UnreservedConcurrentExecutions;
    } catch (error) {
      if (context.signal.aborted) throw context.signal.reason;
      return {
        status: 'warn',
        detail:
          `expected Lambda's account settings; got ${refusalText(error)} -> run verify with credentials allowed ` +
          `lambda:GetAccountSettings to see whether open streams fit the account's concurrency`,
        account_limit: null,
        unreserved: null,
        max_open_streams: maxOpenStreams,
      };
    }
    const reservations = reservationsOf(limit, unreserved);
    const streams = streamsOf(maxOpenStreams, unreserved);
    const measured = { account_limit: limit ?? null, unreserved: unreserved ?? null, ...reservations, ...streams };
    if (unreserved === undefined || unreserved < MIN_UNRESERVED_CONCURRENCY) {
      return {
        status: 'warn',
        detail:
          `expected at least ${MIN_UNRESERVED_CONCURRENCY} unreserved concurrent Lambda executions; the account has ` +
          `${unreserved ?? 'no figure for'} (of ${limit ?? 'an unknown limit'}), ` +
          'and each open stream holds one to the end of its window, so a few listeners throttle every other function -> ' +
          `request more in Service Quotas (AWS Lambda, Concurrent executions): ${CONCURRENCY_QUOTA}; ${streamText(streams)}; ` +
          reservationText(reservations),
        ...measured,
      };
    }
    if (streams.left_for_the_rest !== null && streams.left_for_the_rest < unreserved / 2) {
      return {
        status: 'warn',
        detail:
          `expected open streams to leave at least half of the ${unreserved} unreserved concurrent Lambda executions to ingest, the ` +
          `engine and the collection; ${streamText(streams)} -> cdk deploy -c maxOpenStreams=${Math.max(1, Math.floor(unreserved / 2))}, ` +
          `or raise the quota (${CONCURRENCY_QUOTA}); ${reservationText(reservations)}`,
        ...measured,
      };
    }
    return {
      status: 'pass',
      detail:
        `${unreserved} unreserved of ${limit ?? '?'} concurrent Lambda executions: ${streamText(streams)}; ` +
        reservationText(reservations),
      ...measured,
    };
  },
};

/** What the deployment's open streams may take of the unreserved concurrency, and what they leave (null where unknown). */
function streamsOf(maxOpenStreams: number | null, unreserved: number | undefined) {
  return {
    max_open_streams: maxOpenStreams,
    left_for_the_rest: maxOpenStreams === null || unreserved === undefined ? null : Math.max(0, unreserved - maxOpenStreams),
  };
}

function streamText({ max_open_streams: streams, left_for_the_rest: left }: ReturnType<typeof streamsOf>): string {
  if (streams === null) return 'how many streams the deployment serves at once is unknown (each holds one to the end of its window)';
  const held = `open streams may hold up to ${streams} (-c maxOpenStreams; each one to the end of its window)`;
  return left === null ? held : `${held}, leaving ${left} to ingest, the engine and the collection`;
}

/**
 * Lambda keeps this much of the account's concurrency unreserved: "You can reserve up to the Unreserved account
 * concurrency value that is shown, minus 100 for functions that don't have reserved concurrency"
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html). A deploy whose
 * `-c stepReservedConcurrency` would take more fails on the step function.
 */
export const LAMBDA_UNRESERVED_FLOOR = 100;

/** What functions of the account reserve now, and how much more a deploy may reserve (null where a figure is missing). */
function reservationsOf(limit: number | undefined, unreserved: number | undefined) {
  return {
    reserved: limit === undefined || unreserved === undefined ? null : limit - unreserved,
    reservable: unreserved === undefined ? null : Math.max(0, unreserved - LAMBDA_UNRESERVED_FLOOR),
  };
}

function reservationText({ reserved, reservable }: ReturnType<typeof reservationsOf>): string {
  const held = reserved === null ? '' : `${reserved} reserved by functions of the account; `;
  const floor = `Lambda keeps ${LAMBDA_UNRESERVED_FLOOR} unreserved`;
  if (reservable === null) return `${held}how much -c stepReservedConcurrency may reserve is unknown`;
  if (reservable === 0) return `${held}-c stepReservedConcurrency fails the deploy beyond what the step function reserves now (${floor})`;
  return `${held}-c stepReservedConcurrency may reserve up to ${reservable} more than the step function reserves now (${floor})`;
}

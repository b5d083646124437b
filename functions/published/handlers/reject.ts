import { decisionRoute } from '#published/decision-route.ts';

/** POST /api/v1/published/executions/{execution_id}/reject: follows `rejected`, or fails the execution with the feedback. */
export const handler = decisionRoute('PublishedReject', 'rejected');

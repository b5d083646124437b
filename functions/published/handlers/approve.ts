import { decisionRoute } from '#published/decision-route.ts';

/** POST /api/v1/published/executions/{execution_id}/approve: resumes the execution along its `approved` edge. */
export const handler = decisionRoute('PublishedApprove', 'approved');

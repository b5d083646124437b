import { decisionRequestSchema, executeRequestSchema } from '#executions/execute-request.ts';
import {
  decisionResponseSchema,
  executeResponseSchema,
  executionStatusSchema,
  executionViewSchema,
  pendingApprovalSchema,
  executionUsageSchema,
  stopResponseSchema,
} from '#executions/execution-views.ts';
import {
  agentHandoffDataSchema,
  completeDataSchema,
  errorDataSchema,
  imageDataSchema,
  lifecycleDecisionDataSchema,
  lifecycleStatusDataSchema,
  nodeUpdateDataSchema,
  resumeDataSchema,
  startDataSchema,
  tokenDataSchema,
  toolCallDataSchema,
} from '#executions/stream-event-schemas.ts';
import { publishedErrorBodySchema } from '#shared/http/http-errors.ts';
import { requestBodyComponents, schemaComponents, sseEventSchema, type JsonSchema } from '#shared/http/openapi.ts';
import { STREAM_RESUME_RETRY_MS } from '#shared/limits.ts';
import { streamProbeEndSchema } from './stream-probe.ts';
import { workflowDetailSchema, workflowListSchema, workflowSummarySchema } from './workflow-views.ts';

/*
 * The components of the Published Workflow API's document: request bodies, answers, each event's data and each
 * stream's events, from the zod schemas that validate the requests and type the answers.
 */

/**
 * The execute body's fields in the words of the API's contract. execute-request.ts holds the rules; these are words for
 * callers (and, for the objects, the shape a refinement there checks), and a word for a field the schema no longer
 * has fails the build (refineProperties).
 */
const EXECUTE_FIELDS: Record<string, JsonSchema> = {
  input: {
    description: "Input data for the workflow's start node; `message`, when present, must be a string. Every key is kept",
    properties: { message: { type: 'string', description: 'The message, for workflows that take one' } },
  },
  user_id: { description: 'External user identifier: isolates memory between users (1-256 characters of well-formed Unicode)' },
  thread_id: {
    description:
      'Thread (session) identifier: continues a conversation with its history; generated when omitted (1-256 characters of ' +
      'well-formed Unicode)',
  },
  initial_memory: {
    description: "Key-value pairs written into the user's memory before the execution (keys 1-256 bytes of UTF-8; other keys are kept)",
  },
  callback_url: {
    description: 'Receives a POST with the status response when the execution finishes (signed with webhook_secret when given)',
  },
  webhook_secret: { description: 'Signs the callback with HMAC-SHA256 (Standard Webhooks headers); needs callback_url' },
  overrides: {
    description: "Node parameter overrides `{node_id: {param: value}}`, checked against the workflow's nodes and their parameters",
    additionalProperties: { type: 'object', description: "One node's parameters, by name", additionalProperties: true },
  },
};

const requests = requestBodyComponents({
  ExecuteRequest: executeRequestSchema,
  DecisionRequest: decisionRequestSchema,
});

/** Component names become the type names of callers' generated clients, so they stay as first published. */
const responses = schemaComponents('output', {
  WorkflowSummary: workflowSummarySchema,
  WorkflowList: workflowListSchema,
  WorkflowDetail: workflowDetailSchema,
  ExecutionStatus: executionStatusSchema,
  PendingApproval: pendingApprovalSchema,
  RunUsage: executionUsageSchema,
  Execution: executionViewSchema,
  ExecuteResult: executeResponseSchema,
  StopResult: stopResponseSchema,
  DecisionResult: decisionResponseSchema,
  Error: publishedErrorBodySchema,
  StartEvent: startDataSchema,
  TokenEvent: tokenDataSchema,
  ToolCallEvent: toolCallDataSchema,
  AgentHandoffEvent: agentHandoffDataSchema,
  NodeUpdateEvent: nodeUpdateDataSchema,
  ImageEvent: imageDataSchema,
  ErrorEvent: errorDataSchema,
  CompleteEvent: completeDataSchema,
  ResumeEvent: resumeDataSchema,
  StatusEvent: lifecycleStatusDataSchema,
  DecisionEvent: lifecycleDecisionDataSchema,
  StreamProbeEndEvent: streamProbeEndSchema,
});

/** Each named property gets the words (joined to any the schema has) and the shape given for it. */
function refineProperties(schema: JsonSchema, refinements: Record<string, JsonSchema>): JsonSchema {
  const properties = schema.properties as Record<string, JsonSchema>;
  for (const name of Object.keys(refinements)) if (!properties[name]) throw new Error(`No property ${name} to describe`);
  const refined = (name: string, property: JsonSchema) => {
    const refinement = refinements[name];
    if (!refinement) return property;
    const description = [refinement.description, property.description].filter((text) => typeof text === 'string').join('. ');
    return { ...property, ...refinement, description };
  };
  return {
    ...schema,
    properties: Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, refined(name, property)])),
  };
}

/** An execution's events on `/stream` and `/executions/{id}/stream` (README, Streaming). */
const EXECUTION_STREAM_EVENTS: [event: string, component: string, description: string][] = [
  ['start', 'StartEvent', 'The execution began (always id 1)'],
  ['token', 'TokenEvent', 'A fragment of text from a language model'],
  ['tool_call', 'ToolCallEvent', "An agent's tool call: started, then succeeded or failed"],
  ['agent_handoff', 'AgentHandoffEvent', 'Control passed to another agent'],
  ['node_update', 'NodeUpdateEvent', 'A node started, completed, waits, or an approval was decided'],
  ['image', 'ImageEvent', 'A generated image'],
  ['error', 'ErrorEvent', 'The execution failed (sent before its complete)'],
  ['complete', 'CompleteEvent', 'The execution finished, or paused at an approval (status interrupted): the stream ends'],
];

const RESUME_EVENT = sseEventSchema('resume', 'ResumeEvent', {
  withId: false,
  description:
    'The stream had to end early (its window is up, the log could not be read, or the client took nothing for 30 s while events ' +
    'waited): resume at resume_url, or with Last-Event-ID as EventSource does. Not part of the execution, so it has no id',
  retry: `Milliseconds EventSource waits before it reconnects (with Last-Event-ID): ${STREAM_RESUME_RETRY_MS}, the end being planned`,
});

/** The events of each stream, as components: what a generated client names them. */
const STREAM_EVENTS: Record<string, JsonSchema> = {
  RunStreamEvent: {
    description:
      "One server-sent event of an execution's stream (`POST /workflows/{workflow_id}/stream`, `GET " +
      '/executions/{execution_id}/stream`): `event` names it, `data` is its JSON',
    oneOf: [
      ...EXECUTION_STREAM_EVENTS.map(([event, component, description]) => sseEventSchema(event, component, { withId: true, description })),
      RESUME_EVENT,
    ],
  },
  LifecycleStreamEvent: {
    description: "One server-sent event of an execution's lifecycle (`GET /executions/{execution_id}/events`)",
    oneOf: [
      sseEventSchema('status', 'StatusEvent', {
        withId: true,
        description: "The execution's state: first at subscription, then at each change; a final status ends the stream",
      }),
      sseEventSchema('decision', 'DecisionEvent', { withId: true, description: 'An approval was answered' }),
      RESUME_EVENT,
    ],
  },
  // The probe's one event: a schema of its own, not a `oneOf` of one (Redocly: "use the schema directly").
  StreamProbeEvent: sseEventSchema('end', 'StreamProbeEndEvent', {
    withId: false,
    description: "The stream probe's one event, sent after the hold, just before the response ends: the probe as asked",
  }),
};

/** The probe's query parameters, from the schema that validates them (bounds and defaults). */

/** Every component of the document: what a caller sends, receives, and reads from a stream. */
export const PUBLISHED_SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  ...requests,
  ExecuteRequest: refineProperties(requests.ExecuteRequest!, EXECUTE_FIELDS),
  ...responses,
  ...STREAM_EVENTS,
};

/**
 * The Published Workflow API's types, generated from its OpenAPI document by openapi-typescript.
 * Do not edit: `npm run client:types` writes this file, and a unit test fails when it differs from a fresh generation.
 */

export interface paths {
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This document
         * @description The OpenAPI 3.2 description of the Published Workflow API, its server the address it was fetched from. Needs no key.
         */
        get: operations["PublishedOpenApi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi-3.1.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This document as OpenAPI 3.1
         * @description The same description for tools that read OpenAPI 3.1 but not 3.2. A stream's `schema` is what an SSE client generated from it hands over for each event, the event's `data` (`RunStreamEventData`, ...), or the body as text. Needs no key.
         */
        get: operations["PublishedOpenApi31"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This reference, for reading
         * @description A page that renders openapi-3.1.json with Redoc in the browser. It loads only from this API: the document and the script beside the page. Needs no key.
         */
        get: operations["PublishedDocs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/redoc.standalone.js": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The script of the reference page
         * @description Redoc's standalone bundle, which the reference page loads; gzip-encoded when the request accepts it. Under the version the page names (`v`) it may be kept for a year. Needs no key.
         */
        get: operations["PublishedDocsScript"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the workflows of the active publication
         * @description The workflows of the project's active publication, with the publication they belong to.
         *
         *     The key needs the scope `workflows.read` (or `*`).
         */
        get: operations["PublishedListWorkflows"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{workflow_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Workflow details
         * @description One workflow of the active publication: its name, its description, and when it was created and last updated.
         *
         *     The key needs the scope `workflows.read` (or `*`).
         */
        get: operations["PublishedGetWorkflow"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{workflow_id}/execute": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run a workflow and wait for the result
         * @description Starts the execution and answers when it settles (completed, failed, interrupted at an approval, cancelled). Once the execution has started the status line is sent at once and the JSON document follows, kept alive with leading whitespace; an execution still going after 14 minutes is answered with its current status and poll_url.
         *
         *     The key needs the scope `workflows.execute` (or `*`).
         */
        post: operations["PublishedExecute"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workflows/{workflow_id}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run a workflow and stream its events
         * @description Starts the execution exactly as execute does (same body, same refusals as JSON before the stream opens), then streams its events until `complete`. A dropped connection resumes at GET /executions/{execution_id}/stream.
         *
         *     The key needs the scope `workflows.stream` (or `*`).
         */
        post: operations["PublishedStreamWorkflow"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/executions/{execution_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Status and result of an execution (polling)
         * @description The execution as it stands: its status, output or error, the approval it waits for, and what it has spent.
         *
         *     The key needs the scope `executions.read` (or `*`).
         */
        get: operations["PublishedGetExecution"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/executions/{execution_id}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * An execution's whole event stream, replayed and then live
         * @description The same events, ids and order as the stream that started the execution; resumes after Last-Event-ID or `after`.
         *
         *     The key needs the scope `workflows.stream` (or `*`).
         */
        get: operations["PublishedStreamExecution"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/executions/{execution_id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Subscribe to an execution's lifecycle
         * @description Subscribe-then-fetch: the first event is the execution's current status; an execution already finished gets that one event and the stream closes.
         *
         *     The key needs the scope `events.subscribe` (or `*`).
         */
        get: operations["PublishedExecutionEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/executions/{execution_id}/stop": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Stop an execution
         * @description Only queued and running executions can be stopped; one waiting for an approval (interrupted) or finished answers 409. So does one a decision is resuming (approve or reject answered, or being answered), until its step has taken the decision up, which is in its log by then: a stop either comes before a decision (which then answers 409) or after it applied, never between its 200 and its `decision` event. The step takes a decision up within moments; stop again then.
         *
         *     The key needs the scope `executions.stop` (or `*`).
         */
        post: operations["PublishedStopExecution"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/executions/{execution_id}/approve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Approve the pending step
         * @description The execution resumes along the approval's `approved` edge. A 200 means the decision applies: a stop that came first makes it 409. The same request again (the same decision and feedback) once the decision was delivered answers the same 200, also after the execution went on or finished, so a request whose answer was lost can simply be sent again; another decision on the answered approval is 409. While the execution awaits its next approval, a request decides that one, whatever its body.
         *
         *     The key needs the scope `executions.approve` (or `*`).
         */
        post: operations["PublishedApprove"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/executions/{execution_id}/reject": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Reject the pending step
         * @description The execution follows the `rejected` edge, or fails with the feedback as its error when there is none. A 200 means the decision applies: a stop that came first makes it 409. The same request again (the same decision and feedback) once the decision was delivered answers the same 200, also after the execution went on or finished, so a request whose answer was lost can simply be sent again; another decision on the answered approval is 409. While the execution awaits its next approval, a request decides that one, whatever its body.
         *
         *     The key needs the scope `executions.reject` (or `*`).
         */
        post: operations["PublishedReject"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/diagnostics/stream-probe": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Measure whether small streamed writes reach the client at once
         * @description For operators: tells whether this deployment's response streaming (Lambda through API Gateway) passes a small write on at once or holds it until more bytes follow, which decides how much filler the event streams must send after a write that has to arrive. The function writes, as one write, exactly `bytes` bytes: `:` and `bytes`-1 spaces, the start of a comment line, with no newline. Then it writes nothing for `hold_ms`, ends the comment line, sends one `end` event and ends the response. None of the heartbeat or filler of the other streams is added. A client that has the first `bytes` bytes well before `hold_ms` has passed saw the write pass through unheld. Each probe is one invocation of a streaming function lasting about `hold_ms`, counted against the key's rate limit like any request.
         *
         *     The key needs the scope `workflows.read` (or `*`).
         */
        get: operations["PublishedStreamProbe"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        ExecuteRequest: {
            /** @description Input data for the workflow's start node; `message`, when present, must be a string. Every key is kept. When omitted: `{}`. */
            input?: {
                /** @description The message, for workflows that take one */
                message?: string;
            } & {
                [key: string]: unknown;
            };
            /** @description External user identifier: isolates memory between users (1-256 characters of well-formed Unicode) */
            user_id: string;
            /** @description Thread (session) identifier: continues a conversation with its history; generated when omitted (1-256 characters of well-formed Unicode) */
            thread_id?: string;
            /** @description Key-value pairs written into the user's memory before the execution (keys 1-256 bytes of UTF-8; other keys are kept) */
            initial_memory?: {
                [key: string]: unknown;
            };
            /** @description Receives a POST with the status response when the execution finishes (signed with webhook_secret when given) */
            callback_url?: string;
            /** @description Signs the callback with HMAC-SHA256 (Standard Webhooks headers); needs callback_url */
            webhook_secret?: string;
            /** @description Node parameter overrides `{node_id: {param: value}}`, checked against the workflow's nodes and their parameters. When omitted: `{}`. */
            overrides?: {
                [key: string]: {
                    [key: string]: unknown;
                };
            };
        };
        DecisionRequest: {
            /** @description When omitted: `""`. */
            feedback?: string;
        };
        WorkflowSummary: {
            /** @example support-bot */
            id: string;
            name: string;
            /** @description Empty when the definition has none */
            description: string;
        };
        WorkflowList: {
            /** @description All workflows of the active publication, by id */
            workflows: components["schemas"]["WorkflowSummary"][];
            publication_id: string;
            project_id: string;
        };
        WorkflowDetail: {
            /** @example support-bot */
            id: string;
            name: string;
            /** @description Empty when the definition has none */
            description: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp
             */
            updated_at: string;
        };
        /**
         * @description queued, running; interrupted while an approval is awaited; completed, failed and cancelled are final
         * @enum {string}
         */
        ExecutionStatus: "queued" | "running" | "completed" | "failed" | "interrupted" | "cancelled";
        PendingApproval: {
            approval_id: string;
            /** @description The prompt for the approver */
            message: string;
            /** @description The node awaiting approval */
            node_id: string;
        };
        /** @description What the execution spent on models and tools so far */
        RunUsage: {
            model_calls: number;
            input_tokens: number;
            output_tokens: number;
            tool_calls: number;
            images: number;
        };
        Execution: {
            execution_id: string;
            /** @description Generated when the request named none */
            thread_id: string;
            workflow_id: string;
            status: components["schemas"]["ExecutionStatus"];
            /** @description The answer text or structured data; null until the execution has completed */
            output: unknown;
            /** @description Why the execution failed; null unless status is failed */
            error: string | null;
            /** @description Seconds from creation to finish (to now while not finished) */
            elapsed_time: number;
            /** @description Executed nodes; an approval counts once, when reached */
            total_steps: number;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp
             * @example 2026-05-01T09:30:00.000Z
             */
            created_at: string;
            finished_at: string | null;
            /** @description The approval awaited while status is interrupted; null otherwise */
            pending_approval: components["schemas"]["PendingApproval"] | null;
            usage: components["schemas"]["RunUsage"];
        };
        ExecuteResult: {
            execution_id: string;
            /** @description Generated when the request named none */
            thread_id: string;
            workflow_id: string;
            status: components["schemas"]["ExecutionStatus"];
            /** @description The answer text or structured data; null until the execution has completed */
            output: unknown;
            /** @description Why the execution failed; null unless status is failed */
            error: string | null;
            /** @description Seconds from creation to finish (to now while not finished) */
            elapsed_time: number;
            /** @description Executed nodes; an approval counts once, when reached */
            total_steps: number;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp
             * @example 2026-05-01T09:30:00.000Z
             */
            created_at: string;
            finished_at: string | null;
            /** @description The approval awaited while status is interrupted; null otherwise */
            pending_approval: components["schemas"]["PendingApproval"] | null;
            usage: components["schemas"]["RunUsage"];
            /** @description Present only when the execution outlived the blocking wait (status running or queued): where to poll it */
            poll_url?: string;
        };
        StopResult: {
            execution_id: string;
            /** @constant */
            status: "cancelled";
        };
        DecisionResult: {
            execution_id: string;
            approval_id: string;
            /** @enum {string} */
            decision: "approved" | "rejected";
            /** @constant */
            status: "running";
        };
        Error: {
            /**
             * @description What went wrong, for people; a 400 names the fields (`user_id: Too small: ...`)
             * @example Workflow not found
             */
            detail: string;
            /** @description Only in API Gateway's own answers (unknown route, stage throttle, failed or timed-out integration): the same message */
            error?: string;
        };
        StartEvent: {
            execution_id: string;
            thread_id: string;
            workflow_id: string;
        };
        TokenEvent: {
            /** @description A fragment of text; one node's fragments, concatenated, are its output */
            content: string;
            /** @description The workflow node the event comes from */
            node_id: string;
        };
        ToolCallEvent: {
            /** @description The workflow node the event comes from */
            node_id: string;
            call_id: string;
            tool: string;
            /** @enum {string} */
            status: "started" | "succeeded" | "failed";
            /** @description With started: the arguments the model chose */
            arguments?: unknown;
            /** @description With succeeded and failed */
            duration_ms?: number;
            /** @description With succeeded: the tool's result, cut to 2 KB of JSON text when longer */
            result?: unknown;
            /** @constant */
            result_truncated?: true;
            /** @description With failed */
            error?: string;
        };
        AgentHandoffEvent: {
            from: string;
            to: string;
        };
        NodeUpdateEvent: {
            /** @description The workflow node the event comes from */
            node_id: string;
            /** @description The node's type (llm, agent, condition, wait, approval, ...) */
            type: string;
            /** @enum {string} */
            status: "started" | "completed" | "waiting" | "approved" | "rejected";
            /** @description A completed condition: the node it chose */
            next?: string;
            /** @description A waiting wait node: how long */
            seconds?: number;
            /** @description An approval waiting, approved or rejected */
            approval_id?: string;
            /** @description An approval approved or rejected: the approver's comment */
            feedback?: string;
        };
        ImageEvent: {
            /** @description The workflow node the event comes from */
            node_id: string;
            key: string;
            /** @description A presigned GET URL, valid for an hour */
            url: string;
            /** @constant */
            mime_type: "image/png";
            width: number;
            height: number;
        };
        ErrorEvent: {
            /** @description The same text as the execution's error */
            message: string;
        };
        CompleteEvent: {
            /** @description The answer text or structured data; null unless completed */
            output: unknown;
            execution_id: string;
            status: components["schemas"]["ExecutionStatus"];
            /** @description With failed */
            error?: string;
            /** @description With interrupted: the stream ends at the approval */
            pending_approval?: components["schemas"]["PendingApproval"];
            usage: components["schemas"]["RunUsage"];
        };
        ResumeEvent: {
            last_event_id: number;
            /** @description Continues exactly after the last event sent (stage path included) */
            resume_url: string;
            /**
             * @description time_limit: the stream's window is up (5 minutes unless the deployment sets another, at most 14); unavailable: the log could not be read; slow_reader: the client took nothing for 30 s while events waited
             * @enum {string}
             */
            reason: "time_limit" | "unavailable" | "slow_reader";
        };
        StatusEvent: {
            execution_id: string;
            workflow_id: string | null;
            thread_id: string | null;
            status: components["schemas"]["ExecutionStatus"];
            output: unknown;
            error: string | null;
            pending_approval: components["schemas"]["PendingApproval"] | null;
        };
        DecisionEvent: {
            execution_id: string;
            approval_id: string;
            node_id: string;
            /** @enum {string} */
            decision: "approved" | "rejected";
            feedback: string;
            /** @constant */
            status: "running";
        };
        StreamProbeEndEvent: {
            /** @description The size of the first write, in bytes */
            bytes: number;
            /** @description How long the function wrote nothing after it, in milliseconds */
            hold_ms: number;
        };
        /** @description One server-sent event of an execution's stream (`POST /workflows/{workflow_id}/stream`, `GET /executions/{execution_id}/stream`): `event` names it, `data` is its JSON */
        RunStreamEvent: {
            /** @constant */
            event: "start";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "token";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "tool_call";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "agent_handoff";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "node_update";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "image";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "error";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "complete";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "resume";
            /** @description Milliseconds EventSource waits before it reconnects (with Last-Event-ID): 1000, the end being planned */
            retry?: number;
            data: string;
        };
        /** @description One server-sent event of an execution's lifecycle (`GET /executions/{execution_id}/events`) */
        LifecycleStreamEvent: {
            /** @constant */
            event: "status";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "decision";
            /** @description The event's place in the execution's event log (1, 2, 3, ...): send it back as Last-Event-ID to resume after it */
            id: string;
            data: string;
        } | {
            /** @constant */
            event: "resume";
            /** @description Milliseconds EventSource waits before it reconnects (with Last-Event-ID): 1000, the end being planned */
            retry?: number;
            data: string;
        };
        /**
         * end event
         * @description The stream probe's one event, sent after the hold, just before the response ends: the probe as asked
         */
        StreamProbeEvent: {
            /** @constant */
            event: "end";
            data: string;
        };
        /** @description An OpenAPI document: 3.2.0 at openapi.json, 3.1.0 at openapi-3.1.json */
        OpenApiDocument: {
            /** @enum {string} */
            openapi: "3.2.0" | "3.1.0";
            info: {
                [key: string]: unknown;
            };
            paths: {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: {
        /** @description Seconds to wait before retrying */
        "Retry-After": number;
        /** @description The document's version: send it back as If-None-Match to be answered 304 while it has not changed */
        ETag: string;
        /** @description The execution the answer is about, sent with the status line before any byte of the body (the one an earlier request with the same Idempotency-Key started, when it did) */
        "X-Execution-Id": string;
        /** @description Where the execution's status continues: its GET /executions/{execution_id} URL, to poll if the connection drops */
        ExecutionLocation: string;
        /** @description Where the stream continues: the execution's GET /executions/{execution_id}/stream URL, to resume with Last-Event-ID if the connection drops */
        StreamLocation: string;
        /** @description no-cache */
        "Cache-Control": "no-cache";
        /** @description no: proxies must not buffer the stream */
        "X-Accel-Buffering": "no";
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    PublishedOpenApi: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the copy the caller has (or `*`): answered 304, with no body, while the document has not changed */
                "If-None-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The document (Cache-Control: no-cache; revalidate with its ETag) */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OpenApiDocument"];
                };
            };
            /** @description The document has not changed since the ETag named by If-None-Match: keep the copy you have */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedOpenApi31: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the copy the caller has (or `*`): answered 304, with no body, while the document has not changed */
                "If-None-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The document (Cache-Control: no-cache; revalidate with its ETag) */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OpenApiDocument"];
                };
            };
            /** @description The document has not changed since the ETag named by If-None-Match: keep the copy you have */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedDocs: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description The stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedDocsScript: {
        parameters: {
            query?: {
                /** @description The script's version, as the page names it */
                v?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The script */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/javascript": string;
                };
            };
            /** @description The stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedListWorkflows: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The workflows */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowList"];
                };
            };
            /** @description The project has no active publication, or (with a body) the body is invalid: `detail` names the fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded: 600 requests per minute per key, or the stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedGetWorkflow: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A workflow of the active publication */
                workflow_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The workflow */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowDetail"];
                };
            };
            /** @description The project has no active publication, or (with a body) the body is invalid: `detail` names the fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such workflow in the active publication */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded: 600 requests per minute per key, or the stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedExecute: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: 1-255 printable ASCII characters. The same key with the same request within 24 hours answers about the execution the first one started instead of starting another (waiting for it to start, 503 past 20 seconds); the same key with a different request is refused with 422. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description A workflow of the active publication */
                workflow_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ExecuteRequest"];
            };
        };
        responses: {
            /** @description The execution as it settled (or, past the wait, as it stands, with poll_url) */
            200: {
                headers: {
                    "X-Execution-Id": components["headers"]["X-Execution-Id"];
                    "Content-Location": components["headers"]["ExecutionLocation"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExecuteResult"];
                };
            };
            /** @description The project has no active publication, or the body, the Idempotency-Key or (stream) Last-Event-ID is invalid: `detail` names the fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such workflow in the active publication */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than 131072 bytes */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Idempotency-Key was used in the last 24 hours for a different request */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded: 600 requests per minute per key, or the stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedStreamWorkflow: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: 1-255 printable ASCII characters. The same key with the same request within 24 hours answers about the execution the first one started instead of starting another (waiting for it to start, 503 past 20 seconds); the same key with a different request is refused with 422. */
                "Idempotency-Key"?: string;
                /** @description With an Idempotency-Key that names an execution already: resume its stream after this event id */
                "Last-Event-ID"?: string;
            };
            path: {
                /** @description A workflow of the active publication */
                workflow_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ExecuteRequest"];
            };
        };
        responses: {
            /** @description Server-sent events: `id`, `event`, and `data` as one line of JSON; comment lines keep the connection alive */
            200: {
                headers: {
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "X-Accel-Buffering": components["headers"]["X-Accel-Buffering"];
                    "X-Execution-Id": components["headers"]["X-Execution-Id"];
                    "Content-Location": components["headers"]["StreamLocation"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": unknown;
                };
            };
            /** @description The caller already has the last event of an execution that has ended: nothing more will come (EventSource stops here) */
            204: {
                headers: {
                    "X-Execution-Id": components["headers"]["X-Execution-Id"];
                    "Content-Location": components["headers"]["StreamLocation"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The project has no active publication, or the body, the Idempotency-Key or (stream) Last-Event-ID is invalid: `detail` names the fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such workflow in the active publication */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than 131072 bytes */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Idempotency-Key was used in the last 24 hours for a different request */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded (600 requests per minute per key, or the stage throttle), or too many streams open: the key's own limit (100 unless its operator set another) or the deployment's, all keys together. A stream holds its slot until it ends (at the latest at the end of its window, also when its reader left): retry after Retry-After seconds, or close a stream nobody reads */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedGetExecution: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description An execution of this project */
                execution_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The execution */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Execution"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such execution in this project */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded: 600 requests per minute per key, or the stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedStreamExecution: {
        parameters: {
            query?: {
                /** @description Resume after this event id (the resume URL's form) */
                after?: string;
            };
            header?: {
                /** @description Resume after this event id (what EventSource sends when it reconnects); wins over `after` */
                "Last-Event-ID"?: string;
            };
            path: {
                /** @description An execution of this project */
                execution_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Server-sent events until `complete` */
            200: {
                headers: {
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "X-Accel-Buffering": components["headers"]["X-Accel-Buffering"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": unknown;
                };
            };
            /** @description The caller already has the last event of an execution that has ended: nothing more will come (EventSource stops here) */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Last-Event-ID or after is malformed, or past the last event of the execution */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such execution in this project */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded (600 requests per minute per key, or the stage throttle), or too many streams open: the key's own limit (100 unless its operator set another) or the deployment's, all keys together. A stream holds its slot until it ends (at the latest at the end of its window, also when its reader left): retry after Retry-After seconds, or close a stream nobody reads */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedExecutionEvents: {
        parameters: {
            query?: {
                /** @description Resume after this event id (the resume URL's form) */
                after?: string;
            };
            header?: {
                /** @description Resume after this event id (what EventSource sends when it reconnects); wins over `after` */
                "Last-Event-ID"?: string;
            };
            path: {
                /** @description An execution of this project */
                execution_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Server-sent events until the final status */
            200: {
                headers: {
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "X-Accel-Buffering": components["headers"]["X-Accel-Buffering"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": unknown;
                };
            };
            /** @description The caller already has the last event of an execution that has ended: nothing more will come (EventSource stops here) */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Last-Event-ID or after is malformed, or past the last event of the execution */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such execution in this project */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded (600 requests per minute per key, or the stage throttle), or too many streams open: the key's own limit (100 unless its operator set another) or the deployment's, all keys together. A stream holds its slot until it ends (at the latest at the end of its window, also when its reader left): retry after Retry-After seconds, or close a stream nobody reads */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedStopExecution: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description An execution of this project */
                execution_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Stopped */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StopResult"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such execution in this project */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The execution is neither queued nor running, or a decision on its approval is resuming it */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded: 600 requests per minute per key, or the stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedApprove: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description An execution of this project */
                execution_id: string;
            };
            cookie?: never;
        };
        /** @description May be omitted: feedback defaults to empty */
        requestBody?: {
            content: {
                "application/json": components["schemas"]["DecisionRequest"];
            };
        };
        responses: {
            /** @description The decision was delivered (now, or by the same request before); the execution goes on with it */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DecisionResult"];
                };
            };
            /** @description The body is invalid: `detail` names the fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such execution in this project */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The execution is not waiting for an approval, the approval was already answered otherwise, it can no longer be answered (the execution has failed), or a stop ended the execution first */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than 131072 bytes */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded: 600 requests per minute per key, or the stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedReject: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description An execution of this project */
                execution_id: string;
            };
            cookie?: never;
        };
        /** @description May be omitted: feedback defaults to empty */
        requestBody?: {
            content: {
                "application/json": components["schemas"]["DecisionRequest"];
            };
        };
        responses: {
            /** @description The decision was delivered (now, or by the same request before); the execution goes on with it */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DecisionResult"];
                };
            };
            /** @description The body is invalid: `detail` names the fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such execution in this project */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The execution is not waiting for an approval, the approval was already answered otherwise, it can no longer be answered (the execution has failed), or a stop ended the execution first */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than 131072 bytes */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded: 600 requests per minute per key, or the stage throttle */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    PublishedStreamProbe: {
        parameters: {
            query?: {
                /** @description The size of the first write, in bytes: exactly this many, as one write (`:` and then spaces, the start of a comment line) */
                bytes?: number;
                /** @description How long the function writes nothing after the first write, in milliseconds; the invocation lasts about this long */
                hold_ms?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The first write (a comment clients skip), the hold, then the `end` event */
            200: {
                headers: {
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "X-Accel-Buffering": components["headers"]["X-Accel-Buffering"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": unknown;
                };
            };
            /** @description `bytes` or `hold_ms` is not a whole number within its bounds: `detail` names the parameter */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No Authorization header, or an invalid, revoked or expired key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The key lacks the scope the operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit exceeded (600 requests per minute per key, or the stage throttle), or too many streams open: the key's own limit (100 unless its operator set another) or the deployment's, all keys together. A stream holds its slot until it ends (at the latest at the end of its window, also when its reader left): retry after Retry-After seconds, or close a stream nobody reads */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (details only in the service's log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is after Retry-After seconds */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}

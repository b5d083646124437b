/**
 * The CLI's help, one block per command group. It lives apart from the commands so that `--help` and a usage
 * mistake load none of them (each command loads only what it needs). Each text starts on the line after its name (the
 * backslash continues the literal), so the columns line up in the source as they print.
 */
export const LINKS_USAGE = `\
links issue --type calls|dialogs [--allow-hosts h1,*.h2]
links bind <link_id>
links reissue <link_id>
links revoke <link_id>
links list
links schema <link_id>
links filters <link_id>`;

export const PUBLICATION_USAGE = `\
publish <file.json|directory> [--project P]
unpublish [--project P]`;

export const KEYS_USAGE = `\
keys create --name N (--preset read|execute|full | --scopes a,b) [--expires ISO] [--project P]
            [--max-open-streams N]   (N: as long as a workflow name may be, no control characters; open streams
                                     at once, 1-10000, default 100)
keys rotate <key_id>
keys revoke <key_id>
keys list [--project P]`;

export const COLLECTION_USAGE = `\
tasks create --link <link_id> [--channel a,b] [--direction inbound,outbound]
tasks create --link <link_id> --once --from ISO --to ISO
tasks list [--link <link_id>]
collect --task <task_id>          starts a sweep of the task now and waits for it
events --link <link_id> [--state queued|handed_off|abandoned]
handoffs --link <link_id>`;

export const SECRETS_USAGE = `\
secrets set <NAME> [--project P]     (the value from stdin, or typed at a hidden prompt; never the command line)
secrets list [--project P]           (names and versions, never values)
secrets delete <NAME> [--project P]`;

export const COST_USAGE = `\
cost report [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--project P | --link L] [--region R] [--json | --csv | --html FILE]
                                     (dates in UTC, both included; default: this month so far; --from
                                     defaults to the first day of --to's month; at most as many days as
                                     usage is kept, the refusal names the limit; a table on a terminal,
                                     JSON with --json or into a pipe; --html writes one self-contained
                                     page into a directory that exists: daily chart, subjects, workflows,
                                     forecast)
cost estimate [--events N] [--dialogs N] [--runs N] [--workflow ID] [--project P] [--months 1-36]
              [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--region R] [--json]
                                     a month's cost (x --months) at N call events, dialogs and executions a month
                                     (counts not given are 0; none given: the period's own traffic scaled to
                                     30 days), from the averages of the period (default: the last 30 days)
                                     plus the fixed monthly cost; --workflow/--project choose the executions`;

export const MODELS_USAGE = `\
models [list] [--region R]          the Bedrock models workflows may name: state, end of life, price, and
                                     which a deployment in R (default AWS_REGION, else us-east-1) allows`;

export const VERIFY_USAGE = `\
verify [--skip-models] [--alarms]   after a deploy: checks the deployment end to end (OpenAPI documents, a webhook
                                     link, a workflow execution streamed and resumed, each model once, the step
                                     function's own call to a model, streamed write sizes, the cost tag, Lambda
                                     concurrency) and removes what it created; a table
                                     on a terminal, JSON with --json or into a pipe; exit 1 when a check failed;
                                     --alarms also sets one alarm to ALARM (its topic's subscribers are notified)
                                     to see its action reach the alarm topic, then sets it back`;

import { ruleHolds } from './choice.ts';
import type { Catcher, Retrier, StateDefinition } from './definition.ts';
import { applyTemplate, readPath, selectPath, writeResultPath, type Json } from './paths.ts';
import { MAX_PAYLOAD_BYTES, payloadBytes, StatesError } from './states-error.ts';

/**
 * One state of the Amazon States Language, from its raw input to its output and the next state's name
 * (undefined when the execution ends). Waiting and invoking are the caller's (`StateHooks`), so the same code
 * runs a fresh state and one resumed after the process restarted.
 */
export interface StateHooks {
  /** Lambda's invoke: the function's result, or a StatesError named after the function's error. */
  invoke(functionArn: string, payload: Json): Promise<Json>;
  /** `.waitForTaskToken`: invokes with the token in the payload, then waits for SendTaskSuccess/Failure. */
  invokeAndWaitForToken(functionArn: string, payload: (token: string) => Json): Promise<Json>;
  /** Resolves at `atMs` (a timestamp, so a resumed Wait sleeps only what is left). */
  sleepUntil(atMs: number): Promise<void>;
  /** When this state entered (kept across restarts), for Wait and TimeoutSeconds. */
  enteredAtMs: number;
  /** A Wait state's wake-up time, once computed: kept, so a restart does not start the wait again. */
  wakeAt?: number;
  rememberWakeAt(atMs: number): void;
}

export interface StateOutcome {
  output: Json;
  next: string | undefined;
}

export function checkPayload(value: Json, what: string): void {
  const bytes = payloadBytes(value);
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw new StatesError(
      'States.DataLimitExceeded',
      `The ${what} has a size of ${bytes} bytes, exceeding the maximum number of bytes service limit (${MAX_PAYLOAD_BYTES}).`,
    );
  }
}

export async function runState(name: string, state: StateDefinition, input: Json, context: Json, hooks: StateHooks): Promise<StateOutcome> {
  const next = state.Type === 'Succeed' || state.Type === 'Fail' || state.End ? undefined : state.Next;
  switch (state.Type) {
    case 'Succeed':
      return {
        output: selectPath(state.OutputPath, selectPath(state.InputPath, input, context, 'InputPath'), context, 'OutputPath'),
        next: undefined,
      };
    case 'Fail':
      throw new StatesError(state.Error ?? 'States.Fail', state.Cause ?? '');
    case 'Choice': {
      const effective = selectPath(state.InputPath, input, context, 'InputPath');
      const chosen = state.Choices!.find((rule) => ruleHolds(rule, effective, context))?.Next ?? state.Default;
      if (!chosen) throw new StatesError('States.NoChoiceMatched', `No Choice rule of ${name} matched and there is no Default`);
      return { output: selectPath(state.OutputPath, effective, context, 'OutputPath'), next: chosen };
    }
    case 'Wait': {
      const effective = selectPath(state.InputPath, input, context, 'InputPath');
      const wakeAt = hooks.wakeAt ?? waitUntil(state, effective, context, hooks.enteredAtMs);
      hooks.rememberWakeAt(wakeAt);
      await hooks.sleepUntil(wakeAt);
      return { output: selectPath(state.OutputPath, effective, context, 'OutputPath'), next };
    }
    case 'Pass': {
      const effective = selectPath(state.InputPath, input, context, 'InputPath');
      const result =
        state.Result !== undefined
          ? state.Result
          : state.Parameters !== undefined
            ? applyTemplate(state.Parameters, effective, context)
            : effective;
      return { output: selectPath(state.OutputPath, writeResultPath(input, state.ResultPath, result), context, 'OutputPath'), next };
    }
    case 'Task':
      return { output: await runTask(name, state, input, context, hooks), next };
  }
}

async function runTask(name: string, state: StateDefinition, input: Json, context: Json, hooks: StateHooks): Promise<Json> {
  const effective = selectPath(state.InputPath, input, context, 'InputPath');
  const parameters = (token?: string): Json => {
    const taskContext = token === undefined ? context : { ...(context as Record<string, Json>), Task: { Token: token } };
    const value = state.Parameters === undefined ? effective : applyTemplate(state.Parameters, effective, taskContext);
    checkPayload(value, `input of state '${name}' after Parameters`);
    return value;
  };
  const resource = state.Resource!;
  const work = async (): Promise<Json> => {
    if (/:lambda:[a-z0-9-]+:\d{12}:function:/.test(resource)) return hooks.invoke(resource, parameters());
    const payloadOf = (value: Json) => {
      const { FunctionName, Payload } = (value ?? {}) as { FunctionName?: Json; Payload?: Json };
      if (typeof FunctionName !== 'string') throw new StatesError('States.Runtime', `${name}: Parameters give no FunctionName`);
      return { functionArn: FunctionName, payload: Payload ?? null };
    };
    if (resource.endsWith('.waitForTaskToken')) {
      const probe = payloadOf(parameters('__token__'));
      return hooks.invokeAndWaitForToken(probe.functionArn, (token) => payloadOf(parameters(token)).payload);
    }
    const { functionArn, payload } = payloadOf(parameters());
    const result = await hooks.invoke(functionArn, payload);
    return { ExecutedVersion: '$LATEST', Payload: result, StatusCode: 200 };
  };
  const timeoutSeconds =
    state.TimeoutSeconds ?? (state.TimeoutSecondsPath ? (readPath(state.TimeoutSecondsPath, effective, context) as number) : undefined);
  // A Task has no timeout unless it names one (Step Functions' default is 99999999 s).
  const result = timeoutSeconds === undefined ? await work() : await withDeadline(work(), hooks.enteredAtMs + timeoutSeconds * 1000, hooks);
  checkPayload(result, `result returned by the state/task '${name}'`);
  const selected = state.ResultSelector === undefined ? result : applyTemplate(state.ResultSelector, result, context);
  return selectPath(state.OutputPath, writeResultPath(input, state.ResultPath, selected), context, 'OutputPath');
}

async function withDeadline(work: Promise<Json>, deadlineMs: number, hooks: StateHooks): Promise<Json> {
  const timedOut = hooks.sleepUntil(deadlineMs).then(() => {
    throw new StatesError('States.Timeout', 'The task timed out');
  });
  return Promise.race([work, timedOut]);
}

function waitUntil(state: StateDefinition, input: Json, context: Json, enteredAtMs: number): number {
  if (state.Seconds !== undefined) return enteredAtMs + state.Seconds * 1000;
  if (state.Timestamp !== undefined) return Date.parse(state.Timestamp);
  if (state.SecondsPath !== undefined) {
    const seconds = readPath(state.SecondsPath, input, context);
    if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0) {
      throw new StatesError('States.Runtime', `SecondsPath '${state.SecondsPath}' does not give a non-negative integer`);
    }
    return enteredAtMs + seconds * 1000;
  }
  const timestamp = readPath(state.TimestampPath!, input, context);
  if (typeof timestamp !== 'string' || Number.isNaN(Date.parse(timestamp))) {
    throw new StatesError('States.Runtime', `TimestampPath '${state.TimestampPath}' does not give a timestamp`);
  }
  return Date.parse(timestamp);
}

/** The retrier that handles `error`, if any; terminal errors are not matched by States.ALL. */
export function matchingIndex(rules: readonly (Retrier | Catcher)[] | undefined, error: StatesError, isTask: boolean): number {
  return (rules ?? []).findIndex((rule) =>
    rule.ErrorEquals.some(
      (name) =>
        name === error.name ||
        (!error.terminal && name === 'States.ALL') ||
        (isTask && name === 'States.TaskFailed' && !error.terminal && error.name !== 'States.Timeout'),
    ),
  );
}

/** Backoff before retry `attempt` (0-based) of a retrier, with its MaxDelaySeconds and jitter. */
export function retryDelayMs(retrier: Retrier, attempt: number, random: () => number = Math.random): number {
  const interval = (retrier.IntervalSeconds ?? 1) * Math.pow(retrier.BackoffRate ?? 2, attempt);
  const capped = retrier.MaxDelaySeconds === undefined ? interval : Math.min(interval, retrier.MaxDelaySeconds);
  const ms = capped * 1000;
  return retrier.JitterStrategy === 'FULL' ? Math.round(random() * ms) : ms;
}

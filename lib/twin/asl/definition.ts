import { CHOICE_OPERATORS, type ChoiceRule } from './choice.ts';
import { parsePath, templatePaths, type Json } from './paths.ts';

/**
 * The part of the Amazon States Language (JSONPath flavour) the local runner executes. A definition using
 * anything else fails to load with the reason, rather than running differently from Step Functions.
 */
export interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: 'FULL' | 'NONE';
}

export interface Catcher {
  ErrorEquals: string[];
  Next: string;
  ResultPath?: string | null;
}

export interface StateDefinition {
  Type: 'Task' | 'Choice' | 'Wait' | 'Pass' | 'Succeed' | 'Fail';
  Next?: string;
  End?: boolean;
  InputPath?: string | null;
  OutputPath?: string | null;
  Parameters?: Json;
  ResultSelector?: Json;
  ResultPath?: string | null;
  Result?: Json;
  Resource?: string;
  TimeoutSeconds?: number;
  TimeoutSecondsPath?: string;
  Retry?: Retrier[];
  Catch?: Catcher[];
  Choices?: ChoiceRule[];
  Default?: string;
  Seconds?: number;
  SecondsPath?: string;
  Timestamp?: string;
  TimestampPath?: string;
  Error?: string;
  Cause?: string;
}

export interface MachineDefinition {
  StartAt: string;
  TimeoutSeconds?: number;
  States: Record<string, StateDefinition>;
}

const ALLOWED_FIELDS: Record<StateDefinition['Type'], string[]> = {
  Task: [
    'Resource',
    'Parameters',
    'ResultSelector',
    'ResultPath',
    'InputPath',
    'OutputPath',
    'TimeoutSeconds',
    'TimeoutSecondsPath',
    'Retry',
    'Catch',
    'Next',
    'End',
  ],
  Choice: ['Choices', 'Default', 'InputPath', 'OutputPath'],
  Wait: ['Seconds', 'SecondsPath', 'Timestamp', 'TimestampPath', 'InputPath', 'OutputPath', 'Next', 'End'],
  Pass: ['Result', 'Parameters', 'ResultPath', 'InputPath', 'OutputPath', 'Next', 'End'],
  Succeed: ['InputPath', 'OutputPath'],
  Fail: ['Error', 'Cause'],
};
const COMMON_FIELDS = ['Type', 'Comment'];
const LAMBDA_RESOURCE =
  /^arn:[a-z-]+:states:::lambda:invoke(\.waitForTaskToken)?$|^arn:[a-z-]+:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]+$/;

/** Replaces `${Name}` definition substitutions, as CloudFormation's DefinitionSubstitutions does. */
export function substitute(text: string, substitutions: Record<string, string>): string {
  const result = text.replace(/\$\{([A-Za-z0-9_]+)\}/g, (whole, name: string) => substitutions[name] ?? whole);
  const missing = /\$\{([A-Za-z0-9_]+)\}/.exec(result);
  if (missing) throw new Error(`The state machine definition uses \${${missing[1]}}, which no substitution provides`);
  return result;
}

export function loadDefinition(text: string): MachineDefinition {
  const definition = JSON.parse(text) as MachineDefinition & { QueryLanguage?: string };
  const problems: string[] = [];
  if (definition.QueryLanguage && definition.QueryLanguage !== 'JSONPath') problems.push('only the JSONPath query language is supported');
  if (!definition.States?.[definition.StartAt]) problems.push(`StartAt names no state (${definition.StartAt})`);
  for (const [name, state] of Object.entries(definition.States ?? {})) {
    for (const problem of stateProblems(definition, state)) problems.push(`${name}: ${problem}`);
  }
  if (problems.length > 0) throw new Error(`The state machine definition cannot run locally:\n  ${problems.join('\n  ')}`);
  return definition;
}

function stateProblems(definition: MachineDefinition, state: StateDefinition): string[] {
  const allowed = ALLOWED_FIELDS[state.Type];
  if (!allowed) return [`state type ${state.Type} is not supported by the local runner`];
  const problems: string[] = [];
  for (const field of Object.keys(state)) {
    if (!allowed.includes(field) && !COMMON_FIELDS.includes(field))
      problems.push(`field ${field} is not supported on a ${state.Type} state`);
  }
  const target = (next: string | undefined, field: string) => {
    if (next !== undefined && !definition.States[next]) problems.push(`${field} names no state (${next})`);
  };
  const path = (value: string | null | undefined, field: string) => {
    if (typeof value !== 'string') return;
    try {
      parsePath(value);
    } catch (error) {
      problems.push(`${field}: ${(error as Error).message}`);
    }
  };
  if (['Task', 'Wait', 'Pass'].includes(state.Type) && (state.Next === undefined) === (state.End !== true)) {
    problems.push('needs exactly one of Next and End');
  }
  target(state.Next, 'Next');
  target(state.Default, 'Default');
  for (const field of ['InputPath', 'OutputPath', 'ResultPath', 'SecondsPath', 'TimestampPath', 'TimeoutSecondsPath'] as const)
    path(state[field], field);
  for (const template of [state.Parameters, state.ResultSelector]) {
    for (const value of templatePaths(template ?? null)) {
      if (value.startsWith('States.')) problems.push(`intrinsic function ${value} is not supported`);
      else path(value, 'Parameters');
    }
  }
  if (state.Type === 'Task' && !LAMBDA_RESOURCE.test(state.Resource ?? '')) {
    problems.push(`Resource ${state.Resource} is not a Lambda invocation`);
  }
  for (const catcher of state.Catch ?? []) {
    target(catcher.Next, 'Catch.Next');
    path(catcher.ResultPath, 'Catch.ResultPath');
  }
  for (const retrier of state.Retry ?? []) {
    if (retrier.JitterStrategy && !['FULL', 'NONE'].includes(retrier.JitterStrategy))
      problems.push(`JitterStrategy ${retrier.JitterStrategy}`);
  }
  const checkRule = (rule: ChoiceRule, top: boolean) => {
    if (top) target(rule.Next, 'Choices.Next');
    if (Array.isArray(rule.And) || Array.isArray(rule.Or)) {
      for (const inner of (rule.And ?? rule.Or) as ChoiceRule[]) checkRule(inner, false);
      return;
    }
    if (rule.Not) return checkRule(rule.Not as ChoiceRule, false);
    path(rule.Variable as string, 'Variable');
    const operators = Object.keys(rule).filter((key) => !['Variable', 'Next', 'Comment'].includes(key));
    if (operators.length !== 1 || !CHOICE_OPERATORS.has(operators[0]!))
      problems.push(`choice rule operator ${operators.join(', ')} is not supported`);
  };
  for (const rule of state.Choices ?? []) checkRule(rule, true);
  return problems;
}

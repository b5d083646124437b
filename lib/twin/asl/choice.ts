import { readPath, type Json } from './paths.ts';
import { StatesError } from './states-error.ts';

/** Choice rules of the Amazon States Language (JSONPath flavour). */
export type ChoiceRule = Record<string, Json> & { Next?: string };

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

type Compare = (a: Json, b: Json) => boolean | undefined;
const typed =
  (kind: 'string' | 'number' | 'boolean', test: (a: never, b: never) => boolean): Compare =>
  (a, b) =>
    typeof a === kind && typeof b === kind ? test(a as never, b as never) : false;
const time =
  (test: (a: number, b: number) => boolean): Compare =>
  (a, b) =>
    typeof a === 'string' && typeof b === 'string' && TIMESTAMP.test(a) && TIMESTAMP.test(b) ? test(Date.parse(a), Date.parse(b)) : false;

const COMPARISONS: Record<string, Compare> = {
  StringEquals: typed('string', (a: string, b: string) => a === b),
  StringLessThan: typed('string', (a: string, b: string) => a < b),
  StringGreaterThan: typed('string', (a: string, b: string) => a > b),
  StringLessThanEquals: typed('string', (a: string, b: string) => a <= b),
  StringGreaterThanEquals: typed('string', (a: string, b: string) => a >= b),
  StringMatches: typed('string', (a: string, pattern: string) => globMatches(a, pattern)),
  NumericEquals: typed('number', (a: number, b: number) => a === b),
  NumericLessThan: typed('number', (a: number, b: number) => a < b),
  NumericGreaterThan: typed('number', (a: number, b: number) => a > b),
  NumericLessThanEquals: typed('number', (a: number, b: number) => a <= b),
  NumericGreaterThanEquals: typed('number', (a: number, b: number) => a >= b),
  BooleanEquals: typed('boolean', (a: boolean, b: boolean) => a === b),
  TimestampEquals: time((a, b) => a === b),
  TimestampLessThan: time((a, b) => a < b),
  TimestampGreaterThan: time((a, b) => a > b),
  TimestampLessThanEquals: time((a, b) => a <= b),
  TimestampGreaterThanEquals: time((a, b) => a >= b),
};

const TYPE_TESTS: Record<string, (value: Json | undefined) => boolean> = {
  IsNull: (value) => value === null,
  IsPresent: (value) => value !== undefined,
  IsNumeric: (value) => typeof value === 'number',
  IsString: (value) => typeof value === 'string',
  IsBoolean: (value) => typeof value === 'boolean',
  IsTimestamp: (value) => typeof value === 'string' && TIMESTAMP.test(value),
};

export const CHOICE_OPERATORS = new Set([
  ...Object.keys(COMPARISONS),
  ...Object.keys(COMPARISONS)
    .map((name) => `${name}Path`)
    .filter((name) => name !== 'StringMatchesPath'),
  ...Object.keys(TYPE_TESTS),
]);

function globMatches(text: string, pattern: string): boolean {
  const source = pattern
    .split(/(\\\*|\\\\|\*)/)
    .map((part) => (part === '*' ? '.*' : part === '\\*' ? '\\*' : part === '\\\\' ? '\\\\' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 's').test(text);
}

/** And/Or short-circuit, as every implementation of the language does. */
export function ruleHolds(rule: ChoiceRule, input: Json, context: Json): boolean {
  if (Array.isArray(rule.And)) return (rule.And as ChoiceRule[]).every((inner) => ruleHolds(inner, input, context));
  if (Array.isArray(rule.Or)) return (rule.Or as ChoiceRule[]).some((inner) => ruleHolds(inner, input, context));
  if (rule.Not) return !ruleHolds(rule.Not as ChoiceRule, input, context);
  const variablePath = rule.Variable as string;
  const value = readPath(variablePath, input, context);
  for (const [operator, test] of Object.entries(TYPE_TESTS)) {
    if (operator in rule) return test(value) === rule[operator];
  }
  // Step Functions fails the execution when a condition reads a path that is not there.
  if (value === undefined) {
    throw new StatesError(
      'States.Runtime',
      `Invalid path '${variablePath}': The choice state's condition path references an invalid value.`,
    );
  }
  for (const [operator, compare] of Object.entries(COMPARISONS)) {
    if (operator in rule) return compare(value, rule[operator]!) === true;
    const pathOperator = `${operator}Path`;
    if (pathOperator in rule) {
      const otherPath = rule[pathOperator] as string;
      const other = readPath(otherPath, input, context);
      if (other === undefined) throw new StatesError('States.Runtime', `Invalid path '${otherPath}' in ${pathOperator}`);
      return compare(value, other) === true;
    }
  }
  throw new StatesError('States.Runtime', `Choice rule on ${variablePath} has no comparison`);
}

/**
 * A resource-based policy (an SNS topic policy), evaluated as IAM evaluates one for a caller of the resource's own
 * account: an explicit Deny of a matching statement wins, else an Allow of a matching statement allows, else the
 * request is denied implicitly (docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html).
 * A statement matches when its principal, action, resource and every condition match. What the evaluator does not
 * model (NotPrincipal, NotAction, NotResource, an operator outside OPERATORS, `...IfExists`, set operators) is refused
 * with an error naming it, rather than evaluated differently from IAM.
 */

/** Who calls: an AWS service acting for a resource (CloudWatch for an alarm), or an IAM identity of an account. */
export type Caller = { readonly service: string } | { readonly account: string; readonly arn: string };

export interface ResourceRequest {
  readonly caller: Caller;
  readonly action: string;
  readonly resource: string;
  /** Condition keys the request carries (`aws:SourceArn`, `aws:SourceAccount`, `aws:SecureTransport`); names are case-insensitive. */
  readonly context: Readonly<Record<string, string>>;
}

export type Decision =
  | { readonly decision: 'allow'; readonly sid?: string }
  | { readonly decision: 'explicit-deny'; readonly sid?: string }
  | { readonly decision: 'implicit-deny' };

type Json = Record<string, unknown>;

const valuesOf = (value: unknown, what: string): string[] => {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || list.some((entry) => typeof entry !== 'string' && typeof entry !== 'boolean'))
    throw new Error(`The twin's policy model cannot read ${what}: ${JSON.stringify(value)}`);
  return list.map(String);
};

/** `*` any run of characters, `?` any one character. */
const wildcard = (pattern: string, flags = '') =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    flags,
  );

/** An ARN's six colon-delimited parts (the last keeps its own colons), or undefined for a string that is none. */
function arnParts(arn: string): string[] | undefined {
  const parts = arn.split(':');
  if (parts.length < 6 || parts[0] !== 'arn') return undefined;
  return [...parts.slice(0, 5), parts.slice(5).join(':')];
}

/** ArnLike and ArnEquals: "Each of the six colon-delimited components of the ARN is checked separately", wildcards in each. */
function arnLike(pattern: string): (value: string) => boolean {
  const expected = arnParts(pattern);
  if (!expected) return () => false;
  const tests = expected.map((part) => wildcard(part));
  return (value) => {
    const actual = arnParts(value);
    return actual !== undefined && tests.every((test, i) => test.test(actual[i]!));
  };
}

/**
 * IAM's condition operators, each turning a policy value into a test of the request's value
 * (docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html).
 */
const OPERATORS: Record<string, (pattern: string) => (value: string) => boolean> = {
  StringEquals: (pattern) => (value) => value === pattern,
  StringLike: (pattern) => {
    const regex = wildcard(pattern);
    return (value) => regex.test(value);
  },
  ArnEquals: arnLike,
  ArnLike: arnLike,
  Bool: (pattern) => (value) => value.toLowerCase() === pattern.toLowerCase(),
};

/** Every operator's keys must hold; a key holds when the request carries it and any one of the policy's values matches. */
function conditionsHold(condition: unknown, context: Readonly<Record<string, string>>): boolean {
  if (condition === undefined) return true;
  const carried = new Map(Object.entries(context).map(([key, value]) => [key.toLowerCase(), value]));
  return Object.entries(condition as Json).every(([operator, keys]) => {
    const matcher = OPERATORS[operator];
    if (!matcher) throw new Error(`The twin's policy model has no condition operator ${operator}`);
    return Object.entries(keys as Json).every(([key, values]) => {
      const value = carried.get(key.toLowerCase());
      return value !== undefined && valuesOf(values, `the values of ${key}`).some((pattern) => matcher(pattern)(value));
    });
  });
}

function principalMatches(principal: unknown, caller: Caller): boolean {
  if (principal === '*') return true;
  if (typeof principal !== 'object' || principal === null)
    throw new Error(`The twin's policy model cannot read principal ${JSON.stringify(principal)}`);
  return Object.entries(principal as Json).some(([kind, value]) => {
    const names = valuesOf(value, `principal ${kind}`);
    if (kind === 'Service') return 'service' in caller && names.includes(caller.service);
    if (kind !== 'AWS') throw new Error(`The twin's policy model has no principal type ${kind}`);
    if ('service' in caller) return false;
    // An account (its id or its root ARN) stands for every identity of the account, as the account delegates to IAM.
    return names.some(
      (name) =>
        name === '*' || name === caller.arn || name === caller.account || new RegExp(`^arn:[^:]+:iam::${caller.account}:root$`).test(name),
    );
  });
}

function statementMatches(statement: Json, request: ResourceRequest): boolean {
  for (const unmodelled of ['NotPrincipal', 'NotAction', 'NotResource'])
    if (unmodelled in statement) throw new Error(`The twin's policy model has no ${unmodelled}`);
  if (statement.Effect !== 'Allow' && statement.Effect !== 'Deny')
    throw new Error(`A statement's Effect is Allow or Deny, not ${JSON.stringify(statement.Effect)}`);
  return (
    principalMatches(statement.Principal, request.caller) &&
    valuesOf(statement.Action, 'Action').some((action) => wildcard(action, 'i').test(request.action)) &&
    valuesOf(statement.Resource, 'Resource').some((resource) => wildcard(resource).test(request.resource)) &&
    conditionsHold(statement.Condition, request.context)
  );
}

/** The decision on `request` of a policy document (`{Statement: [...]}`) or its statements alone. */
export function evaluateResourcePolicy(
  policy: { readonly Statement: readonly unknown[] } | readonly unknown[],
  request: ResourceRequest,
): Decision {
  const statements = (Array.isArray(policy) ? policy : (policy as { Statement: readonly unknown[] }).Statement) as Json[];
  const matching = statements.filter((statement) => statementMatches(statement, request));
  const deny = matching.find((statement) => statement.Effect === 'Deny');
  if (deny) return { decision: 'explicit-deny', sid: deny.Sid as string | undefined };
  const allow = matching.find((statement) => statement.Effect === 'Allow');
  if (allow) return { decision: 'allow', sid: allow.Sid as string | undefined };
  return { decision: 'implicit-deny' };
}

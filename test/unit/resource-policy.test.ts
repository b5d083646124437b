import { describe, expect, it } from 'vitest';
import { evaluateResourcePolicy, type ResourceRequest } from '#lib/twin/iam/resource-policy.ts';

/**
 * The twin's evaluator of resource-based policies, held to IAM's rules: an explicit Deny wins over any Allow, an Allow
 * allows, anything else is denied (docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html);
 * ArnLike checks "each of the six colon-delimited components of the ARN ... separately", condition keys are
 * case-insensitive, a key the request lacks fails a condition without IfExists
 * (docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html).
 */
const TOPIC = 'arn:aws:sns:us-east-1:111122223333:alarms';
const request = (context: Record<string, string>, caller: ResourceRequest['caller'] = { service: 'cloudwatch.amazonaws.com' }) => ({
  caller,
  action: 'SNS:Publish',
  resource: TOPIC,
  context,
});
const allowAlarms = {
  Effect: 'Allow',
  Principal: { Service: ['cloudwatch.amazonaws.com'] },
  Action: 'sns:Publish',
  Resource: TOPIC,
  Condition: { ArnLike: { 'aws:SourceArn': 'arn:aws:cloudwatch:us-east-1:111122223333:alarm:Ops-*' } },
};

describe('a resource policy', () => {
  it('allows on a matching Allow, lets an explicit Deny win, and denies everything else implicitly', () => {
    const source = { 'AWS:SourceArn': 'arn:aws:cloudwatch:us-east-1:111122223333:alarm:Ops-Errors-1' };
    expect(evaluateResourcePolicy([allowAlarms], request(source))).toEqual({ decision: 'allow' });
    const denyAll = { Sid: 'No', Effect: 'Deny', Principal: '*', Action: 'sns:*', Resource: '*' };
    expect(evaluateResourcePolicy([allowAlarms, denyAll], request(source))).toEqual({ decision: 'explicit-deny', sid: 'No' });
    expect(evaluateResourcePolicy([allowAlarms], request(source, { service: 'events.amazonaws.com' }))).toEqual({
      decision: 'implicit-deny',
    });
    expect(evaluateResourcePolicy([allowAlarms], request({}))).toEqual({ decision: 'implicit-deny' });
  });

  it('matches ArnLike component by component: a wildcard never spans into another component', () => {
    const crossing = { ...allowAlarms, Condition: { ArnLike: { 'aws:SourceArn': 'arn:aws:cloudwatch:*:alarm:Ops-*' } } };
    const source = { 'aws:SourceArn': 'arn:aws:cloudwatch:us-east-1:111122223333:alarm:Ops-Errors-1' };
    expect(evaluateResourcePolicy([crossing], request(source))).toEqual({ decision: 'implicit-deny' });
    const perComponent = { ...allowAlarms, Condition: { ArnLike: { 'aws:SourceArn': 'arn:aws:cloudwatch:*:*:alarm:Ops-*' } } };
    expect(evaluateResourcePolicy([perComponent], request(source))).toEqual({ decision: 'allow' });
    expect(evaluateResourcePolicy([perComponent], request({ 'aws:SourceArn': 'not-an-arn' }))).toEqual({ decision: 'implicit-deny' });
  });

  it('compares Bool values as IAM does, and matches an account principal to any identity of that account', () => {
    const tlsOnly = {
      Effect: 'Deny',
      Principal: '*',
      Action: 'sns:Publish',
      Resource: TOPIC,
      Condition: { Bool: { 'aws:SecureTransport': 'false' } },
    };
    const accountMay = { Effect: 'Allow', Principal: { AWS: 'arn:aws:iam::111122223333:root' }, Action: 'sns:Publish', Resource: TOPIC };
    const someone = { account: '111122223333', arn: 'arn:aws:iam::111122223333:role/operator' };
    expect(evaluateResourcePolicy([tlsOnly, accountMay], request({ 'aws:SecureTransport': 'true' }, someone))).toEqual({
      decision: 'allow',
    });
    expect(evaluateResourcePolicy([tlsOnly, accountMay], request({ 'aws:SecureTransport': 'FALSE' }, someone)).decision).toBe(
      'explicit-deny',
    );
    const stranger = { account: '444455556666', arn: 'arn:aws:iam::444455556666:role/operator' };
    expect(evaluateResourcePolicy([accountMay], request({}, stranger))).toEqual({ decision: 'implicit-deny' });
  });

  it('refuses what it does not model rather than evaluating it differently from IAM', () => {
    expect(() =>
      evaluateResourcePolicy([{ ...allowAlarms, Condition: { StringEqualsIfExists: { 'aws:SourceAccount': '1' } } }], request({})),
    ).toThrow('no condition operator StringEqualsIfExists');
    expect(() => evaluateResourcePolicy([{ ...allowAlarms, NotAction: 'sns:Subscribe' }], request({}))).toThrow('no NotAction');
    expect(() => evaluateResourcePolicy([{ ...allowAlarms, Effect: 'Permit' }], request({}))).toThrow('Allow or Deny');
  });
});

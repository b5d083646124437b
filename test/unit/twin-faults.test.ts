import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, FaultPlan, parseTwinFaults, type FaultKind, type InjectedFault } from '#lib/twin/faults.ts';
import { drawStoreFault } from '#lib/twin/iam/store-faults.ts';
import { faultLine, shownResource } from '#lib/twin/twin-log.ts';

/** `TWIN_FAULTS` as `npm start` reads it, and the plan's draws: seeded, per kind, replayable. */
const EXAMPLE =
  'dynamodb:throttle=0.05,dynamodb:error=0.02,s3:error=0.05,sfn:throttle=0.05,bedrock:throttle=0.1,lambda:crash-after-write=0.02,lambda:delay=200ms@0.1';
const AT = new Date(2026, 0, 2, 3, 4, 5, 6);

const draws = (plan: FaultPlan, kind: FaultKind, count: number) => Array.from({ length: count }, () => plan.draw(kind));
const refusal = (value: string, seed?: string) => {
  try {
    parseTwinFaults(value, seed);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${value} was accepted`);
};

describe('TWIN_FAULTS', () => {
  it('reads kinds with their rates, lambda:delay with its delay, and the seed', () => {
    const plan = parseTwinFaults(EXAMPLE, '42')!;
    expect(plan.seed).toBe(42);
    expect(plan.rate('dynamodb:throttle')).toBe(0.05);
    expect(plan.rate('bedrock:throttle')).toBe(0.1);
    expect(plan.rate('lambda:crash-after-write')).toBe(0.02);
    expect(plan.rate('lambda:delay')).toBe(0.1);
    expect(plan.delayMs).toBe(200);
    // Not named: never.
    expect(plan.rate('ssm:throttle')).toBe(0);
    expect(plan.rate('lambda:error')).toBe(0);
    expect(plan.spec).toBe(EXAMPLE);
    expect(parseTwinFaults(' ssm:throttle=1 , lambda:error=0.5 ', '0')!.spec).toBe('ssm:throttle=1,lambda:error=0.5');
  });

  it('is off when unset, and picks a seed when none is given', () => {
    expect(parseTwinFaults(undefined)).toBeUndefined();
    expect(parseTwinFaults(undefined, '')).toBeUndefined();
    const seed = parseTwinFaults('s3:error=0.1')!.seed;
    expect(Number.isInteger(seed) && seed >= 0 && seed <= 0xffffffff).toBe(true);
    expect(Number.isInteger(parseTwinFaults('s3:error=0.1', ' ')!.seed)).toBe(true);
  });

  it.each(['', '  '])('refuses %j: a variable that expanded to nothing must not switch the faults off unseen', (value) => {
    expect(refusal(value, '7')).toBe('TWIN_FAULTS is set but empty: name the faults (kind=rate,...), or unset it for none');
    expect(() => parseTwinFaults(value)).toThrow('TWIN_FAULTS is set but empty');
  });

  it('refuses a seed without faults: it would draw nothing', () => {
    expect(() => parseTwinFaults(undefined, '42')).toThrow(
      'TWIN_FAULTS_SEED is set but TWIN_FAULTS is not: a seed draws nothing without faults to draw',
    );
  });

  it('quotes a long value by its first 80 characters and its length, never whole', () => {
    const long = `s3:error=${'9'.repeat(100_000)}`;
    const refused = refusal(long, '1');
    expect(refused).toBe(`TWIN_FAULTS: ${JSON.stringify(long.slice(0, 80))}… (100009 characters) needs a rate from 0 to 1 (e.g. 0.05)`);
    expect(refusal(`s3:error=0.1,,${'x'.repeat(100_000)}`, '1')).toContain('"s3:error=0.1,,xxx');
    expect(refusal(`s3:error=0.1,,${'x'.repeat(100_000)}`, '1')).toContain('… (100014 characters) has an empty entry');
    const seed = '1'.repeat(100_000);
    expect(refusal('s3:error=0.1', seed)).toBe(
      `TWIN_FAULTS_SEED must be a whole number from 0 to 4294967295, got ${JSON.stringify(seed.slice(0, 80))}… (100000 characters)`,
    );
    // Characters, not UTF-16 units: a quote never ends in half an emoji.
    expect(refusal(`x${'😀'.repeat(100)}=0.1`, '1')).toContain(`${JSON.stringify(`x${'😀'.repeat(79)}`)}… (105 characters)`);
  });

  it.each([
    ['dynamodb:slow=0.1', '"dynamodb:slow=0.1" names no fault kind'],
    ['s3:error=1.5', '"s3:error=1.5" needs a rate from 0 to 1'],
    ['s3:error=-0.1', '"s3:error=-0.1" needs a rate from 0 to 1'],
    ['s3:error=NaN', '"s3:error=NaN" needs a rate from 0 to 1'],
    ['s3:error=', '"s3:error=" needs a rate from 0 to 1'],
    ['s3:error=1e-2', '"s3:error=1e-2" needs a rate from 0 to 1'],
    ['s3:error', '"s3:error" is not kind=rate'],
    ['s3:error=0.1,s3:error=0.2', '"s3:error=0.2" repeats s3:error'],
    ['s3:error=0.1,', 'has an empty entry'],
    ['lambda:delay=200@0.1', '"lambda:delay=200@0.1" is not lambda:delay=<N>ms@<rate>'],
    ['lambda:delay=200ms', '"lambda:delay=200ms" is not lambda:delay=<N>ms@<rate>'],
    ['lambda:delay=0.1', '"lambda:delay=0.1" is not lambda:delay=<N>ms@<rate>'],
    ['lambda:delay=0ms@0.1', '"lambda:delay=0ms@0.1" needs a delay from 1 to 900000 ms'],
    ['lambda:delay=200ms@2', '"lambda:delay=200ms@2" needs a rate from 0 to 1 after the @'],
  ])('refuses %s, naming the setting and the part', (value, message) => {
    const refused = refusal(value, '1');
    expect(refused).toMatch(/^TWIN_FAULTS: /);
    expect(refused).toContain(message);
  });

  it.each(['abc', '-1', '1.5', '4294967296', '99999999999'])('refuses the seed %s, even without faults', (seed) => {
    expect(refusal('s3:error=0.1', seed)).toBe(`TWIN_FAULTS_SEED must be a whole number from 0 to 4294967295, got ${JSON.stringify(seed)}`);
    expect(() => parseTwinFaults(undefined, seed)).toThrow('TWIN_FAULTS_SEED must be');
  });
});

describe('a fault plan', () => {
  it('draws the same faults from the same seed, and others from another', () => {
    const first = parseTwinFaults(EXAMPLE, '1234')!;
    const again = parseTwinFaults(EXAMPLE, '1234')!;
    const other = parseTwinFaults(EXAMPLE, '1235')!;
    const sequence = (plan: FaultPlan) => FAULT_KINDS.map((kind) => draws(plan, kind, 400));
    const firstDraws = sequence(first);
    expect(sequence(again)).toEqual(firstDraws);
    expect(sequence(other)).not.toEqual(firstDraws);
    // Roughly the rate: 400 draws at 0.1 give far more than none and far fewer than half.
    const bedrock = firstDraws[FAULT_KINDS.indexOf('bedrock:throttle')]!.filter(Boolean).length;
    expect(bedrock).toBeGreaterThan(10);
    expect(bedrock).toBeLessThan(100);
  });

  it("keeps each kind's sequence whatever the other kinds draw or their rates", () => {
    const alone = new FaultPlan(99, { 'dynamodb:throttle': 0.3 });
    const busy = new FaultPlan(99, { 'dynamodb:throttle': 0.3, 's3:error': 0.5, 'lambda:error': 1 });
    const expected = draws(alone, 'dynamodb:throttle', 200);
    const interleaved = Array.from({ length: 200 }, () => {
      busy.draw('s3:error');
      busy.pick('s3:error', ['a', 'b']);
      busy.draw('lambda:error');
      return busy.draw('dynamodb:throttle');
    });
    expect(interleaved).toEqual(expected);
  });

  it('never fires at rate 0 and always at rate 1, and follows a rate changed while running', () => {
    const plan = new FaultPlan(5, { 's3:error': 1, 'ssm:throttle': 0 });
    expect(draws(plan, 's3:error', 1000).every(Boolean)).toBe(true);
    expect(draws(plan, 'ssm:throttle', 1000).some(Boolean)).toBe(false);
    expect(draws(plan, 'lambda:error', 1000).some(Boolean)).toBe(false);
    plan.set('s3:error', 0);
    plan.set('ssm:throttle', 1);
    expect(draws(plan, 's3:error', 1000).some(Boolean)).toBe(false);
    expect(draws(plan, 'ssm:throttle', 1000).every(Boolean)).toBe(true);
  });

  it('refuses a rate outside 0..1, an unknown kind and a delay without its milliseconds', () => {
    const plan = new FaultPlan(1);
    expect(() => plan.set('s3:error', 1.01)).toThrow('s3:error: the rate must be a number from 0 to 1, got 1.01');
    expect(() => plan.set('s3:error', Number.NaN)).toThrow('the rate must be a number from 0 to 1');
    expect(() => plan.set('s3:oops' as FaultKind, 0.1)).toThrow('unknown fault kind "s3:oops"');
    expect(() => plan.set('lambda:delay', 0.1)).toThrow('lambda:delay needs a delay');
    expect(() => plan.set('s3:error', 0.1, 200)).toThrow('s3:error takes no delay');
    plan.set('lambda:delay', 0.1, 50);
    expect(plan.spec).toBe('lambda:delay=50ms@0.1');
  });

  it('counts what was injected, every kind present, and tells its listeners', () => {
    const plan = new FaultPlan(3, { 'lambda:error': 1 });
    const heard: InjectedFault[] = [];
    const stop = plan.onFault((fault) => heard.push(fault));
    expect(plan.counts()).toEqual(Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])));
    const fault: InjectedFault = { kind: 'lambda:error', functionName: 'WebhookPostEvent', outcome: 'Runtime.ExitError' };
    plan.inject(fault);
    stop();
    plan.inject(fault);
    expect(plan.counts()['lambda:error']).toBe(2);
    expect(plan.counts()['s3:error']).toBe(0);
    expect(heard).toEqual([fault]);
  });
});

describe('store faults', () => {
  const always = new FaultPlan(11, { 'dynamodb:throttle': 1, 'dynamodb:error': 1, 'sfn:throttle': 1, 's3:error': 1 });

  it('throttle only the Step Functions calls AWS throttles', () => {
    for (const operation of ['StartExecution', 'SendTaskSuccess', 'SendTaskFailure', 'SendTaskHeartbeat', 'StopExecution']) {
      expect(drawStoreFault(always, 'states', operation)).toBe('sfn:throttle');
    }
    expect(drawStoreFault(always, 'states', 'DescribeExecution')).toBeUndefined();
  });

  it('give the first kind that fires, and none to the account stand-ins', () => {
    expect(drawStoreFault(always, 'dynamodb', 'PutItem')).toBe('dynamodb:throttle');
    expect(drawStoreFault(always, 's3', 'PUT')).toBe('s3:error');
    expect(drawStoreFault(always, 'ce', 'ListCostAllocationTags')).toBeUndefined();
    expect(drawStoreFault(always, 'lambda', 'GET')).toBeUndefined();
    expect(drawStoreFault(new FaultPlan(11, { 'dynamodb:error': 1 }), 'dynamodb', 'PutItem')).toBe('dynamodb:error');
  });
});

describe('the fault lines', () => {
  it('name the kind, the call, what it named and who made it, with ids cut', () => {
    const fault: InjectedFault = {
      kind: 'dynamodb:throttle',
      functionName: 'WebhookPostEvent',
      operation: 'PutItem',
      resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/local-inbound-events',
      outcome: 'ThrottlingException',
    };
    expect(faultLine(fault, AT)).toBe(
      '03:04:05.006 fault dynamodb:throttle PutItem local-inbound-events by WebhookPostEvent ThrottlingException',
    );
    expect(faultLine({ kind: 'lambda:crash-after-write', functionName: 'WebhookPostEvent', outcome: 'Runtime.ExitError' }, AT)).toBe(
      '03:04:05.006 fault lambda:crash-after-write WebhookPostEvent Runtime.ExitError',
    );
    expect(faultLine({ kind: 'lambda:delay', functionName: 'WorkflowStep', outcome: '200 ms' }, AT)).toBe(
      '03:04:05.006 fault lambda:delay WorkflowStep 200 ms',
    );
  });

  it('show a resource without its ARN prefix, and no long secret or id whole', () => {
    const id = '3f2a9c1e-7b4d-4e1a-9c2b-5d6e7f8a9b0c';
    expect(shownResource(`arn:aws:s3:::local-bodies/executions/${id}/input.json`)).toBe('local-bodies/executions/3f2a9c1e…/input.json');
    expect(shownResource(`arn:aws:states:us-east-1:000000000000:execution:local-workflow:callback-${id}`)).toBe(
      'local-workflow:callback-3f2a9c1e…',
    );
    expect(shownResource('arn:aws:ssm:us-east-1:000000000000:parameter/local/secrets/p/API_KEY')).toBe('/local/secrets/p/API_KEY');
    expect(shownResource('arn:aws:s3:::b/inbound/whk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd/x')).toBe('b/inbound/whk_AbCdEf…/x');
    expect(shownResource('arn:aws:dynamodb:us-east-1:0:table/t\n12:00 forged')).toBe('t?12:00 forged');
  });
});

import { randomInt } from 'node:crypto';

/**
 * Faults on purpose: `npm start` with `TWIN_FAULTS` makes the twin answer some of the functions' calls the way AWS
 * answers on a bad day (a throttle, a server error, a crashed invocation), so retries and idempotency are exercised
 * offline. Draws come from a seeded generator, so a session that failed can be replayed with its seed.
 */
export const TWIN_FAULTS_ENV = 'TWIN_FAULTS';
export const TWIN_FAULTS_SEED_ENV = 'TWIN_FAULTS_SEED';

export const FAULT_KINDS = [
  'dynamodb:throttle',
  'dynamodb:error',
  's3:error',
  'sfn:throttle',
  'bedrock:throttle',
  'ssm:throttle',
  'lambda:error',
  'lambda:crash-after-write',
  'lambda:delay',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Longer than any function's timeout (15 minutes) would only ever time it out. */
const MAX_FAULT_DELAY_MS = 900_000;

/** One fault the twin injected, for its log line and whoever listens. */
export interface InjectedFault {
  kind: FaultKind;
  /** The function that called the store, or whose invocation was failed, crashed or delayed. */
  functionName: string;
  /** Store faults: the operation refused (`PutItem`, `GetObject`, `StartExecution`) and the resource it named (an ARN). */
  operation?: string;
  resource?: string;
  /** What the caller got: the error's name (`ThrottlingException`, `Runtime.ExitError`) or the delay (`200 ms`). */
  outcome: string;
}

export type FaultListener = (fault: InjectedFault) => void;

/**
 * A number in [0, 1) per call, the same sequence for the same seed (mulberry32): small, fast, and good enough to
 * decide 1 call in 20; not for anything secret. The chaos suite draws its traffic mix from it too.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** FNV-1a of the stream's name, started from the seed: each stream's own seed, unrelated to its neighbours'. */
function streamSeed(seed: number, name: string): number {
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < name.length; i += 1) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}

const zeroCounts = (): Record<FaultKind, number> => Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;

/** What a twin with no plan reports: every kind, none injected. */
export const NO_FAULTS: Readonly<Record<FaultKind, number>> = Object.freeze(zeroCounts());

/**
 * Which faults the twin injects, how often, and what it has injected. Each kind draws from its own stream (and
 * picks its variant from another), so one kind's rate or draws never shift another kind's sequence: the same seed
 * and the same calls give the same faults.
 */
export class FaultPlan {
  private readonly rates = new Map<FaultKind, number>();
  private delay = 0;
  private readonly decisions = new Map<FaultKind, () => number>();
  private readonly variants = new Map<FaultKind, () => number>();
  private readonly injectedCounts = zeroCounts();
  private readonly listeners = new Set<FaultListener>();

  constructor(
    readonly seed: number,
    rates: Partial<Record<FaultKind, number>> = {},
    delayMs = 0,
  ) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
      throw new Error(`a fault seed is a whole number from 0 to ${0xffffffff}, got ${seed}`);
    for (const kind of FAULT_KINDS) {
      this.decisions.set(kind, seededRandom(streamSeed(seed, kind)));
      this.variants.set(kind, seededRandom(streamSeed(seed, `${kind}#variant`)));
    }
    if (delayMs > 0) this.set('lambda:delay', 0, delayMs);
    for (const [kind, rate] of Object.entries(rates) as [FaultKind, number][]) this.set(kind, rate);
  }

  /** The plan as `TWIN_FAULTS` would write it (kinds at rate 0 left out). */
  get spec(): string {
    return [...this.rates]
      .filter(([, rate]) => rate > 0)
      .map(([kind, rate]) => (kind === 'lambda:delay' ? `${kind}=${this.delay}ms@${rate}` : `${kind}=${rate}`))
      .join(',');
  }

  rate(kind: FaultKind): number {
    return this.rates.get(kind) ?? 0;
  }

  /** How long `lambda:delay` holds an invocation before its handler starts. */
  get delayMs(): number {
    return this.delay;
  }

  /** Changes a kind's rate while the twin runs (tests: a fault for the first call only); `delayMs` only for `lambda:delay`. */
  set(kind: FaultKind, rate: number, delayMs?: number): void {
    if (!FAULT_KINDS.includes(kind)) throw new Error(`unknown fault kind ${JSON.stringify(kind)} (one of ${FAULT_KINDS.join(', ')})`);
    if (!(rate >= 0 && rate <= 1)) throw new Error(`${kind}: the rate must be a number from 0 to 1, got ${rate}`);
    if (delayMs !== undefined) {
      if (kind !== 'lambda:delay') throw new Error(`${kind} takes no delay`);
      if (!Number.isInteger(delayMs) || delayMs < 1 || delayMs > MAX_FAULT_DELAY_MS)
        throw new Error(`${kind}: the delay must be a whole number of milliseconds from 1 to ${MAX_FAULT_DELAY_MS}, got ${delayMs}`);
      this.delay = delayMs;
    }
    if (kind === 'lambda:delay' && rate > 0 && this.delay === 0) throw new Error(`${kind} needs a delay (${kind}=<N>ms@<rate>)`);
    this.rates.set(kind, rate);
  }

  /** Whether this call gets the fault. Every call draws, whatever the rate, so changing one rate keeps the sequence. */
  draw(kind: FaultKind): boolean {
    return this.decisions.get(kind)!() < this.rate(kind);
  }

  /** Which of AWS's answers an injected fault gives, where AWS has several (a DynamoDB throttle's two names). */
  pick<T>(kind: FaultKind, choices: readonly T[]): T {
    return choices[Math.floor(this.variants.get(kind)!() * choices.length)]!;
  }

  /** Counts a fault the twin has just injected and tells the listeners. */
  inject(fault: InjectedFault): void {
    this.injectedCounts[fault.kind] += 1;
    for (const listener of this.listeners) listener(fault);
  }

  /** Faults injected so far, every kind present. */
  counts(): Record<FaultKind, number> {
    return { ...this.injectedCounts };
  }

  /** Calls `listener` with each fault injected from now on; the answer removes it. */
  onFault(listener: FaultListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

const RATE = /^(?:\d+(?:\.\d*)?|\.\d+)$/;
const DELAY = /^(\d{1,7})ms@(.*)$/;

function parseRate(text: string): number {
  return RATE.test(text) ? Number(text) : Number.NaN;
}

/** How much of a refused value a message quotes: enough to recognise it, never a whole pasted file. */
const QUOTED_CHARACTERS = 80;

/** A value as a refusal quotes it: whole when short, else its first QUOTED_CHARACTERS characters and its length. */
function quoted(value: string): string {
  const characters = [...value];
  if (characters.length <= QUOTED_CHARACTERS) return JSON.stringify(value);
  return `${JSON.stringify(characters.slice(0, QUOTED_CHARACTERS).join(''))}… (${characters.length} characters)`;
}

/** A seed as written: a whole number from 0 to 2^32-1; unset or empty picks one at random (bin/local prints it). */
function parseFaultSeed(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return randomInt(0, 2 ** 32);
  const seed = /^\d{1,10}$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!(seed <= 0xffffffff))
    throw new Error(`${TWIN_FAULTS_SEED_ENV} must be a whole number from 0 to ${0xffffffff}, got ${quoted(value)}`);
  return seed;
}

/**
 * `TWIN_FAULTS` and `TWIN_FAULTS_SEED` as `npm start` reads them: `kind=rate,...` with a rate from 0 to 1, and
 * `lambda:delay=<N>ms@<rate>`. Unset is no plan (no fault, no per-request work). Anything else not understood is
 * refused with the part that is wrong, never ignored: an empty value (a variable that expanded to nothing would
 * otherwise switch the faults off unseen), a seed without faults to draw, and a bad seed even without faults.
 */
export function parseTwinFaults(value: string | undefined, seedValue?: string): FaultPlan | undefined {
  const seed = parseFaultSeed(seedValue);
  if (value === undefined) {
    if (seedValue === undefined || seedValue.trim() === '') return undefined;
    throw new Error(`${TWIN_FAULTS_SEED_ENV} is set but ${TWIN_FAULTS_ENV} is not: a seed draws nothing without faults to draw`);
  }
  if (value.trim() === '') throw new Error(`${TWIN_FAULTS_ENV} is set but empty: name the faults (kind=rate,...), or unset it for none`);
  const refuse = (part: string, why: string) => new Error(`${TWIN_FAULTS_ENV}: ${quoted(part)} ${why}`);
  const plan = new FaultPlan(seed);
  const seen = new Set<string>();
  for (const entry of value.split(',').map((part) => part.trim())) {
    if (entry === '') throw refuse(value, 'has an empty entry (entries are kind=rate, separated by commas)');
    const equals = entry.indexOf('=');
    if (equals === -1) throw refuse(entry, 'is not kind=rate');
    const kind = entry.slice(0, equals).trim();
    const setting = entry.slice(equals + 1).trim();
    if (!(FAULT_KINDS as readonly string[]).includes(kind))
      throw refuse(entry, `names no fault kind (the kinds: ${FAULT_KINDS.join(', ')})`);
    if (seen.has(kind)) throw refuse(entry, `repeats ${kind}`);
    seen.add(kind);
    if (kind === 'lambda:delay') {
      const delay = DELAY.exec(setting);
      if (!delay) throw refuse(entry, 'is not lambda:delay=<N>ms@<rate> (e.g. lambda:delay=200ms@0.1)');
      const delayMs = Number(delay[1]);
      if (delayMs < 1 || delayMs > MAX_FAULT_DELAY_MS) throw refuse(entry, `needs a delay from 1 to ${MAX_FAULT_DELAY_MS} ms`);
      const rate = parseRate(delay[2]!);
      if (!(rate >= 0 && rate <= 1)) throw refuse(entry, 'needs a rate from 0 to 1 after the @');
      plan.set(kind, rate, delayMs);
      continue;
    }
    const rate = parseRate(setting);
    if (!(rate >= 0 && rate <= 1)) throw refuse(entry, 'needs a rate from 0 to 1 (e.g. 0.05)');
    plan.set(kind as FaultKind, rate);
  }
  return plan;
}

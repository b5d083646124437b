import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createApiKeysRepository } from '#published/api-keys-repository.ts';
import { createKey, revokeKey, type ApiKeysDeps } from '#published/api-keys-service.ts';
import type { GrantedScope } from '#published/api-key-model.ts';
import { createCounterStore } from '#shared/store/counter-store.ts';
import { VERIFY_PROJECT_PREFIX } from '#lib/pricing/cost-report.ts';
import { CliExit, CliText } from './cli-text.ts';
import type { AdminTarget, VerifyServices } from './target.ts';
import { UsageError } from './usage-error.ts';
import {
  CHECK_NAMES,
  CheckFailure,
  type CheckOutcome,
  type CheckResult,
  type Cleanup,
  type TemporaryProject,
  type VerifyCheck,
  type VerifyContext,
} from './verify-check.ts';
import { openApiCheck } from './verify-openapi.ts';
import { webhookCheck } from './verify-webhook.ts';
import { workflowCheck } from './verify-workflow.ts';
import { modelsCheck } from './verify-models.ts';
import { stepModelCheck } from './verify-step-model.ts';
import { streamWritesCheck } from './verify-stream-writes.ts';
import { concurrencyCheck, costTagCheck } from './verify-account.ts';
import { ALARMS_SKIPPED, alarmsCheck } from './verify-alarms.ts';
import { listenForInterrupts, SIGNAL_EXIT_CODES, type Interrupt } from './verify-interrupt.ts';

/** Every check, in CHECK_NAMES' order (checked when the module loads: the report's order is the names' order). */
const CHECKS: readonly VerifyCheck[] = [
  openApiCheck,
  webhookCheck,
  workflowCheck,
  modelsCheck,
  stepModelCheck,
  streamWritesCheck,
  costTagCheck,
  concurrencyCheck,
  alarmsCheck,
];
if (CHECKS.map((check) => check.name).join() !== CHECK_NAMES.join())
  throw new Error('lib/admin/verify-command.ts: CHECKS must follow CHECK_NAMES');

/**
 * What the temporary key may do: run, stream, read, approve the verify workflow, end an execution a failure left behind
 * (stop, reject), and the stream probe (`workflows.read`). Nothing else.
 */
const VERIFY_KEY_SCOPES: GrantedScope[] = [
  'workflows.read',
  'workflows.execute',
  'workflows.stream',
  'executions.read',
  'executions.approve',
  'executions.reject',
  'executions.stop',
];
/** The key expires by itself an hour after it is made, should the command be killed before it revokes it (kill -9). */
const VERIFY_KEY_LIFETIME_MS = 60 * 60_000;

export interface VerifyFlags {
  json?: boolean;
  'skip-models'?: boolean;
  /** Runs the alarms check, which notifies the alarm topic's subscribers. */
  alarms?: boolean;
  stack?: string;
  region?: string;
}

export interface VerifyIo {
  terminal: boolean;
  now: () => number;
  status?: (text: string) => void;
}

export interface VerifyReport {
  target: string;
  passed: boolean;
  checks: CheckResult[];
  /** What the command created and removed (or revoked) again, in the order it was undone. */
  cleaned_up: string[];
  /** Set when SIGINT or SIGTERM ended the checks early (the cleanup still ran). */
  interrupted?: string;
}

/**
 * `admin verify`: runs every check against the deployment in order, undoes what they created (also after a failure,
 * or when SIGINT or SIGTERM arrives: the checks stop where they are and the cleanup runs), and answers the report:
 * a table at a terminal, one JSON object otherwise. Exit 0 when no check failed (warnings do not fail), 1 when one
 * did, 130/143 when a signal ended it.
 */
export async function runVerifyCommand(target: AdminTarget, args: string[], flags: VerifyFlags, io: VerifyIo): Promise<CliExit> {
  if (args.length > 0) throw new UsageError(`verify takes no arguments (got ${args.join(' ')})`);
  // Before anything else: an interrupt at any point still ends in the report of what ran, after the cleanup.
  const interrupt = listenForInterrupts();
  try {
    io.status?.('verify: preparing the checks');
    return await verifyUntilInterrupted(target, await target.verify(), flags, io, interrupt);
  } finally {
    interrupt.stop();
  }
}

/** The checks, then the cleanup, against the deployment's services; `interrupt` stops the checks where they are. */
async function verifyUntilInterrupted(
  target: AdminTarget,
  services: VerifyServices,
  flags: VerifyFlags,
  io: VerifyIo,
  interrupt: Interrupt,
): Promise<CliExit> {
  const cleanup = new CleanupStack();
  const adminFlags = target.deployed && flags.stack ? ` --stack ${flags.stack} --region ${services.region}` : '';
  const context: VerifyContext = {
    target,
    services,
    apiUrl: target.publicBaseUrl.replace(/\/+$/, ''),
    webhookUrl: target.webhookBaseUrl.replace(/\/+$/, ''),
    signal: interrupt.signal,
    cleanup,
    project: temporaryProject(target, cleanup, io.now, adminFlags),
    adminFlags,
    now: io.now,
    status: (text) => io.status?.(`verify: ${text}`),
  };
  let checks: CheckResult[];
  let cleanupFailures: CheckResult[];
  try {
    checks = await runChecks(context, flags['skip-models'] ?? false, flags.alarms ?? false);
  } finally {
    io.status?.('verify: cleaning up');
    cleanupFailures = await cleanup.undoAll();
  }
  const interrupted = interrupt.interrupted();
  const all = [...checks, ...cleanupFailures];
  const report: VerifyReport = {
    target: services.description,
    passed: !interrupted && all.every((check) => check.status !== 'fail'),
    checks: all,
    cleaned_up: cleanup.done,
    ...(interrupted ? { interrupted } : {}),
  };
  const exitCode = interrupted ? SIGNAL_EXIT_CODES[interrupted] : report.passed ? 0 : 1;
  return new CliExit(io.terminal && !flags.json ? new CliText(verifyTable(report, process.stdout.columns)) : report, exitCode);
}

/** The checks that call Bedrock models, which `--skip-models` skips. */
const MODEL_CHECKS: ReadonlySet<string> = new Set(['models', 'step-model']);

/** Each check in order; one that throws fails with its line, and after an interrupt the rest are skipped. */
async function runChecks(context: VerifyContext, skipModels: boolean, alarms: boolean): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of CHECKS) {
    if (context.signal.aborted) {
      results.push({ check: check.name, status: 'skip', detail: `not run: ${(context.signal.reason as Error).message}` });
      continue;
    }
    if (MODEL_CHECKS.has(check.name) && skipModels) {
      results.push({ check: check.name, status: 'skip', detail: 'skipped (--skip-models)' });
      continue;
    }
    if (check.name === 'alarms' && !alarms) {
      results.push({ check: check.name, status: 'skip', detail: ALARMS_SKIPPED });
      continue;
    }
    context.status(check.name);
    const startedAt = performance.now();
    const outcome = await outcomeOf(check, context);
    results.push({ check: check.name, ...outcome, seconds: Math.round((performance.now() - startedAt) / 100) / 10 });
  }
  return results;
}

async function outcomeOf(check: VerifyCheck, context: VerifyContext): Promise<CheckOutcome> {
  try {
    return await check.run(context);
  } catch (error) {
    if (context.signal.aborted) return { status: 'skip', detail: `${(context.signal.reason as Error).message} before this check finished` };
    if (error instanceof CheckFailure) return { status: 'fail', detail: error.message, ...error.measurements };
    // The product refused an admin step (publish, a key, a link), or a store refused the operator: its message says what.
    const { name, message } = error as Error;
    return {
      status: 'fail',
      detail:
        `expected the ${check.name} check to run; got ${name}: ${message.replace(/\s+/g, ' ')}. Fix what the message names (on AWS: ` +
        `what your credentials may do with the stack's tables), then verify again`,
    };
  }
}

/** The undo steps of what the checks created, run last made first; each failure is a line saying what is left. */
class CleanupStack implements Cleanup {
  private readonly steps: { what: string; undo: () => Promise<boolean | void>; manually: string; done: boolean }[] = [];
  readonly done: string[] = [];

  add(what: string, undo: () => Promise<boolean | void>, manually: string): () => Promise<void> {
    const step = { what, undo, manually, done: false };
    this.steps.push(step);
    return async () => {
      if (step.done) return;
      step.done = true;
      if ((await undo()) !== false) this.done.push(what);
    };
  }

  async undoAll(): Promise<CheckResult[]> {
    const failures: CheckResult[] = [];
    for (const step of [...this.steps].reverse()) {
      if (step.done) continue;
      step.done = true;
      try {
        if ((await step.undo()) !== false) this.done.push(step.what);
      } catch (error) {
        failures.push({
          check: 'cleanup',
          status: 'fail',
          detail: `expected to remove ${step.what}; got ${(error as Error).name}: ${(error as Error).message}. To finish: ${step.manually}`,
        });
      }
    }
    return failures;
  }
}

/** A project of the command's own (never `default`: publishing replaces a project's active publication), and its key. */
function temporaryProject(target: AdminTarget, cleanup: Cleanup, now: () => number, adminFlags: string): TemporaryProject {
  // Named so that cost reports mark its traffic and leave it out of the per-run figures and averages.
  const projectId = `${VERIFY_PROJECT_PREFIX}${randomBytes(4).toString('hex')}`;
  let key: Promise<string> | undefined;
  const deps: ApiKeysDeps = {
    keys: createApiKeysRepository(target.dynamo, target.tables.apiKeys),
    counters: createCounterStore(target.dynamo, target.tables.counters),
    now,
  };
  return {
    projectId,
    key: () =>
      (key ??= (async () => {
        const created = await createKey(deps, {
          name: 'admin verify',
          projectId,
          scopes: VERIFY_KEY_SCOPES,
          expiresAt: new Date(now() + VERIFY_KEY_LIFETIME_MS).toISOString(),
        });
        cleanup.add(
          `key ${created.key_id} of project ${projectId}`,
          async () => void (await revokeKey(deps, created.key_id)),
          `npm run --silent admin -- keys revoke ${created.key_id}${adminFlags} (it expires by itself within the hour)`,
        );
        return created.key;
      })()),
  };
}

const STATUS_WORDS: Record<CheckResult['status'], string> = { pass: 'pass', fail: 'FAIL', warn: 'warn', skip: 'skip' };

/**
 * The report as a person reads it at a terminal: the target, one row per check (check, result, detail, the detail
 * wrapped to `width` and each of its lines on a row of its own), what was cleaned up, and the verdict.
 */
export function verifyTable(report: VerifyReport, width = 100): string {
  const checkWidth = Math.max('check'.length, ...report.checks.map((check) => check.check.length));
  const resultWidth = 'result'.length;
  const indent = checkWidth + resultWidth + 4;
  const detailWidth = Math.max(40, width - indent - 1);
  const row = (check: string, result: string, detail: string) =>
    `${check.padEnd(checkWidth)}  ${result.padEnd(resultWidth)}  ${detail}`.trimEnd();
  const lines = [`verify ${report.target}`, '', row('check', 'result', 'detail')];
  for (const check of report.checks) {
    const detail = check.detail.split('\n').flatMap((line) => wrap(line, detailWidth));
    lines.push(row(check.check, STATUS_WORDS[check.status], detail[0] ?? ''));
    for (const more of detail.slice(1)) lines.push(`${' '.repeat(indent)}${more}`);
  }
  if (report.cleaned_up.length > 0) lines.push('', ...wrap(`cleaned up: ${report.cleaned_up.join('; ')}`, Math.max(40, width - 1)));
  lines.push('', verdict(report));
  return `${lines.join('\n')}\n`;
}

function verdict(report: VerifyReport): string {
  const count = (status: CheckResult['status']) => report.checks.filter((check) => check.status === status).length;
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const warnings = count('warn') > 0 ? `, ${plural(count('warn'), 'warning')}` : '';
  const leftBehind = report.checks.some((check) => check.check === 'cleanup');
  if (report.interrupted)
    return `interrupted by ${report.interrupted}: the checks stopped${
      leftBehind ? '; see cleanup for what is left' : ', and what they had created was removed'
    }`;
  if (!report.passed) return `${plural(count('fail'), 'check')} failed${warnings}`;
  return `passed${warnings}${count('skip') > 0 ? `, ${count('skip')} skipped` : ''}`;
}

/** Words of `text` in lines of at most `width` characters (a longer word gets a line of its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line || lines.length === 0) lines.push(line);
  return lines;
}

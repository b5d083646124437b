import { parseArgs } from 'node:util';
import { CliExit, CliStream, CliText } from './cli-text.ts';
import type { AdminTarget } from './target.ts';
import {
  COLLECTION_USAGE,
  COST_USAGE,
  KEYS_USAGE,
  LINKS_USAGE,
  MODELS_USAGE,
  PUBLICATION_USAGE,
  SECRETS_USAGE,
  VERIFY_USAGE,
} from './usage.ts';
import { UsageError } from './usage-error.ts';

const USAGE = `usage: npm run --silent admin -- <command> [--json] [--stack NAME [--region R]]

${LINKS_USAGE}
${PUBLICATION_USAGE}
${KEYS_USAGE}
${COLLECTION_USAGE}
${SECRETS_USAGE}
${COST_USAGE}
${MODELS_USAGE}
${VERIFY_USAGE}

Without --stack it acts on the local twin of $DATA_DIR (default .local/data), running or not; with --stack, in the
region --region names, else AWS_REGION, else your AWS profile's. With --json, stdout is one JSON object (--help
--json: {"usage": ...}). Exit 0: done; 2: a usage mistake; 1: the product refused (an id that names nothing too).`;

type Flags = Record<string, string | boolean | undefined>;
type Command = (target: AdminTarget, args: string[], flags: Flags, io: CliInput) => Promise<object>;

/**
 * What a command may read besides its arguments: a secret's value, from stdin only (`prompt`: what to ask when
 * stdin is a terminal); the time (tests move it); whether stdout is a terminal (a person reads a table there).
 */
export interface CliInput {
  stdin: (prompt?: string) => Promise<string>;
  now?: () => number;
  terminal?: boolean;
  /** Where an answer written as it is made (`handoffs`) goes, each piece awaited; unset, the pieces are gathered into `stdout`. */
  stdout?: (piece: string) => Promise<void>;
  /**
   * Where a long wait (`collect`) says how it is going. Unset: one line on stderr, rewritten in place, when stderr is
   * a terminal; nothing at all into a pipe or a file, where scripts and tests read stderr.
   */
  status?: (text: string) => void;
}

/** Runs `work` with a status line on `stream` if it is a terminal, and clears the line after, so the answer starts clean. */
export async function withTerminalStatus<T>(
  stream: NodeJS.WriteStream,
  work: (status: ((text: string) => void) | undefined) => Promise<T>,
): Promise<T> {
  if (!stream.isTTY) return work(undefined);
  const CLEAR_LINE = '\r\x1b[K';
  let shown = false;
  try {
    return await work((text) => {
      shown = true;
      // A line wider than the terminal wraps, and `\r` would then rewrite only its last row.
      stream.write(`${CLEAR_LINE}${text.slice(0, Math.max(1, (stream.columns || 80) - 1))}`);
    });
  } finally {
    if (shown) stream.write(CLEAR_LINE);
  }
}

/**
 * A Map: `admin constructor` or `admin toString` must be unknown commands, not Object.prototype's functions. Each
 * command's module is loaded when it runs, so a call loads the SDK clients and services of its command only.
 */
const COMMANDS = new Map<string, Command>([
  ['links', async (target, args, flags) => (await import('./links-commands.ts')).runLinksCommand(target, args, flags)],
  ['keys', async (target, args, flags, io) => (await import('./keys-commands.ts')).runKeysCommand(target, args, flags, io.now ?? Date.now)],
  [
    'publish',
    async (target, args, flags, io) =>
      (await import('./publication-commands.ts')).runPublicationCommand(target, 'publish', args, flags, io.now ?? Date.now),
  ],
  [
    'unpublish',
    async (target, args, flags, io) =>
      (await import('./publication-commands.ts')).runPublicationCommand(target, 'unpublish', args, flags, io.now ?? Date.now),
  ],
  ['tasks', async (target, args, flags) => (await import('./collection-commands.ts')).runTasksCommand(target, args, flags)],
  [
    'collect',
    async (target, args, flags, io) => {
      const { runCollectCommand } = await import('./collection-commands.ts');
      return io.status
        ? runCollectCommand(target, args, flags, io.status)
        : withTerminalStatus(process.stderr, (status) => runCollectCommand(target, args, flags, status));
    },
  ],
  ['events', async (target, args, flags) => (await import('./collection-commands.ts')).runEventsCommand(target, args, flags)],
  ['handoffs', async (target, args, flags) => (await import('./collection-commands.ts')).runHandoffsCommand(target, args, flags)],
  ['secrets', async (target, args, flags, io) => (await import('./secrets-commands.ts')).runSecretsCommand(target, args, flags, io.stdin)],
  [
    'cost',
    async (target, args, flags, io) => (await import('./cost-commands.ts')).runCostCommand(target, args, flags, io.terminal ?? false),
  ],
  [
    'verify',
    async (target, args, flags, io) => {
      const { runVerifyCommand } = await import('./verify-command.ts');
      const verify = (status: ((text: string) => void) | undefined) =>
        runVerifyCommand(target, args, flags, { terminal: io.terminal ?? false, now: io.now ?? Date.now, status });
      return io.status ? verify(io.status) : withTerminalStatus(process.stderr, verify);
    },
  ],
]);

/** Commands that read only the product's own files (the model catalog, the price sheet): no data directory is opened. */
const OFFLINE_COMMANDS = new Map<string, (args: string[], flags: Flags, io: CliInput) => Promise<object>>([
  [
    'models',
    async (args, flags, io) => (await import('./models-commands.ts')).runModelsCommand(args, (io.now ?? Date.now)(), flags.region),
  ],
]);

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** The twin's stores or the deployed stack, open for the command and closed after it; `notes` gets its notice. */
async function withTarget<T>(
  where: { stack?: string; region?: string },
  notes: string[],
  command: (target: AdminTarget) => Promise<T>,
): Promise<T> {
  const { resolveTarget } = await import('./target.ts');
  const target = await resolveTarget({ stack: where.stack, region: where.region });
  if (target.notice) notes.push(`note: ${target.notice}\n`);
  try {
    return await command(target);
  } finally {
    await target.close();
  }
}

/** A failure once part of a written answer is out: no JSON error can follow that part, so it goes to stderr alone. */
class AnswerCutShort extends Error {
  constructor(reason: unknown) {
    super(`the answer on stdout stops short: ${(reason as Error).message}`);
  }
}

/** An answer written as it is made goes out while its target is open: to `io.stdout`, else gathered as text. */
async function written(outcome: object, io: CliInput): Promise<object> {
  if (!(outcome instanceof CliStream)) return outcome;
  const stdout = io.stdout;
  if (stdout) {
    let started = false;
    await outcome
      .writeTo((piece) => {
        started = true;
        return stdout(piece);
      })
      .catch((error: unknown) => {
        throw started ? new AnswerCutShort(error) : error;
      });
    return new CliText('');
  }
  const pieces: string[] = [];
  await outcome.writeTo(async (piece) => void pieces.push(piece));
  return new CliText(pieces.join(''));
}

/** A result's `warnings` (a Legacy model at publish), repeated on stderr where a person reading the terminal sees them. */
function warningLines(result: object): string {
  const warnings = (result as { warnings?: unknown }).warnings;
  return Array.isArray(warnings) ? warnings.map((warning) => `warning: ${String(warning)}\n`).join('') : '';
}

/** Runs one admin command; with --json stdout is exactly one JSON object, errors included. */
export async function runCli(
  argv: string[],
  io: CliInput = { stdin: () => Promise.reject(new UsageError('this command reads stdin, and none was given')) },
): Promise<CliResult> {
  let json = argv.includes('--json');
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        stack: { type: 'string' },
        region: { type: 'string' },
        type: { type: 'string' },
        'allow-hosts': { type: 'string' },
        project: { type: 'string' },
        name: { type: 'string' },
        preset: { type: 'string' },
        scopes: { type: 'string' },
        expires: { type: 'string' },
        'max-open-streams': { type: 'string' },
        link: { type: 'string' },
        task: { type: 'string' },
        channel: { type: 'string' },
        direction: { type: 'string' },
        once: { type: 'boolean' },
        from: { type: 'string' },
        to: { type: 'string' },
        state: { type: 'string' },
        csv: { type: 'boolean' },
        html: { type: 'string' },
        events: { type: 'string' },
        dialogs: { type: 'string' },
        runs: { type: 'string' },
        months: { type: 'string' },
        workflow: { type: 'string' },
        'skip-models': { type: 'boolean' },
        alarms: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    });
    // `--json` after `--` is no flag, but whoever typed it reads stdout as one JSON object all the same.
    json = values.json === true || positionals.includes('--json');
    if (values.help) return { exitCode: 0, stdout: json ? `${JSON.stringify({ usage: USAGE })}\n` : `${USAGE}\n`, stderr: '' };
    if (positionals.length === 0) {
      if (json) throw new UsageError('no command given; see --help for the commands');
      return { exitCode: 2, stdout: `${USAGE}\n`, stderr: '' };
    }
    const [area, ...rest] = positionals;
    const command = COMMANDS.get(area ?? '');
    const offline = OFFLINE_COMMANDS.get(area ?? '');
    if (!command && !offline) throw new UsageError(`unknown command ${area}`);
    const notes: string[] = [];
    const outcome = offline
      ? await offline(rest, values, io)
      : await withTarget(values, notes, async (target) => written(await command!(target, rest, values, io), io));
    const [result, exitCode] = outcome instanceof CliExit ? [outcome.answer, outcome.exitCode] : [outcome, 0];
    if (result instanceof CliText) return { exitCode, stdout: result.text, stderr: notes.join('') };
    return { exitCode, stdout: `${JSON.stringify(result, null, json ? undefined : 2)}\n`, stderr: notes.join('') + warningLines(result) };
  } catch (error) {
    const details = (error as { details?: { field: string; message: string }[] }).details;
    const message = details?.length
      ? `${(error as Error).message}: ${details.map((issue) => `${issue.field}: ${issue.message}`).join('; ')}`
      : (error as Error).message;
    const exitCode = error instanceof UsageError || (error as Error).name === 'TypeError' ? 2 : 1;
    const usage = exitCode === 2 ? `\n${USAGE}\n` : '\n';
    const jsonError = json && !(error instanceof AnswerCutShort);
    return { exitCode, stdout: jsonError ? `${JSON.stringify({ error: message })}\n` : '', stderr: `error: ${message}${usage}` };
  }
}

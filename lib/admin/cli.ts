import { parseArgs } from 'node:util';
import { runLinksCommand, LINKS_USAGE } from './links-commands.ts';
import { KEYS_USAGE, runKeysCommand } from './keys-commands.ts';
import { PUBLICATION_USAGE, runPublicationCommand } from './publication-commands.ts';
import { COLLECTION_USAGE, runCollectCommand, runEventsCommand, runHandoffsCommand, runTasksCommand } from './collection-commands.ts';
import { runSecretsCommand, SECRETS_USAGE } from './secrets-commands.ts';
import { COST_USAGE, runCostCommand } from './cost-commands.ts';
import { MODELS_USAGE, runModelsCommand } from './models-commands.ts';
import { CliText } from './cli-text.ts';
import { resolveTarget, type AdminTarget } from './target.ts';
import { UsageError } from './usage-error.ts';

const USAGE = `usage: npm run --silent admin -- <command> [--json] [--stack NAME [--region R]]

${LINKS_USAGE}
${PUBLICATION_USAGE}
${KEYS_USAGE}
${COLLECTION_USAGE}
${SECRETS_USAGE}
${COST_USAGE}
${MODELS_USAGE}

Without --stack it acts on the local twin of $DATA_DIR (default .local/data), running or not.`;

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
}

/** A Map: `admin constructor` or `admin toString` must be unknown commands, not Object.prototype's functions. */
const COMMANDS = new Map<string, Command>([
  ['links', (target, args, flags) => runLinksCommand(target, args, flags)],
  ['keys', (target, args, flags, io) => runKeysCommand(target, args, flags, io.now ?? Date.now)],
  ['publish', (target, args, flags, io) => runPublicationCommand(target, 'publish', args, flags, io.now ?? Date.now)],
  ['unpublish', (target, args, flags, io) => runPublicationCommand(target, 'unpublish', args, flags, io.now ?? Date.now)],
  ['tasks', runTasksCommand],
  ['collect', runCollectCommand],
  ['events', runEventsCommand],
  ['handoffs', runHandoffsCommand],
  ['secrets', (target, args, flags, io) => runSecretsCommand(target, args, flags, io.stdin)],
  ['cost', (target, args, flags, io) => runCostCommand(target, args, flags, io.terminal ?? false)],
  ['models', (_target, args, _flags, io) => Promise.resolve(runModelsCommand(args, (io.now ?? Date.now)()))],
]);

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** A result's `warnings` (a Legacy model at publish), repeated on stderr where a person reading the terminal sees them. */
function warningLines(result: object): string {
  const warnings = (result as { warnings?: unknown }).warnings;
  return Array.isArray(warnings) ? warnings.map((warning) => `warning: ${String(warning)}\n`).join('') : '';
}

/** Runs one admin command; with --json stdout is exactly one JSON object, errors included. */
export async function runCli(argv: string[], io: CliInput = { stdin: () => Promise.reject(new UsageError('this command reads stdin, and none was given')) }): Promise<CliResult> {
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
        link: { type: 'string' },
        task: { type: 'string' },
        channel: { type: 'string' },
        direction: { type: 'string' },
        once: { type: 'boolean' },
        from: { type: 'string' },
        to: { type: 'string' },
        state: { type: 'string' },
        csv: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    });
    json = values.json ?? false;
    if (values.help || positionals.length === 0) return { exitCode: values.help ? 0 : 2, stdout: `${USAGE}\n`, stderr: '' };
    const [area, ...rest] = positionals;
    const command = COMMANDS.get(area ?? '');
    if (!command) throw new UsageError(`unknown command ${area}`);
    const target = await resolveTarget({ stack: values.stack, region: values.region });
    try {
      const result = await command(target, rest, values, io);
      if (result instanceof CliText) return { exitCode: 0, stdout: result.text, stderr: '' };
      return { exitCode: 0, stdout: `${JSON.stringify(result, null, json ? undefined : 2)}\n`, stderr: warningLines(result) };
    } finally {
      await target.close();
    }
  } catch (error) {
    const details = (error as { details?: { field: string; message: string }[] }).details;
    const message = details?.length
      ? `${(error as Error).message}: ${details.map((issue) => `${issue.field}: ${issue.message}`).join('; ')}`
      : (error as Error).message;
    const exitCode = error instanceof UsageError || (error as Error).name === 'TypeError' ? 2 : 1;
    const usage = exitCode === 2 ? `\n${USAGE}\n` : '\n';
    return { exitCode, stdout: json ? `${JSON.stringify({ error: message })}\n` : '', stderr: `error: ${message}${usage}` };
  }
}

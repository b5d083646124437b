import { parseArgs } from 'node:util';
import { runLinksCommand, LINKS_USAGE } from './links-commands.ts';
import { resolveTarget } from './target.ts';
import { UsageError } from './usage-error.ts';

const USAGE = `usage: npm run --silent admin -- <command> [--json] [--stack NAME [--region R]]

${LINKS_USAGE}

Without --stack it acts on the local twin of $DATA_DIR (default .local/data), running or not.`;

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs one admin command; with --json stdout is exactly one JSON object, errors included. */
export async function runCli(argv: string[]): Promise<CliResult> {
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
        help: { type: 'boolean' },
      },
    });
    json = values.json ?? false;
    if (values.help || positionals.length === 0) return { exitCode: values.help ? 0 : 2, stdout: `${USAGE}\n`, stderr: '' };
    const [area, ...rest] = positionals;
    if (area !== 'links') throw new UsageError(`unknown command ${area}`);
    const target = await resolveTarget({ stack: values.stack, region: values.region });
    try {
      const result = await runLinksCommand(target, rest, values);
      return { exitCode: 0, stdout: `${JSON.stringify(result, null, json ? undefined : 2)}\n`, stderr: '' };
    } finally {
      await target.close();
    }
  } catch (error) {
    const message = (error as Error).message;
    const exitCode = error instanceof UsageError || (error as Error).name === 'TypeError' ? 2 : 1;
    const usage = exitCode === 2 ? `\n${USAGE}\n` : '\n';
    return { exitCode, stdout: json ? `${JSON.stringify({ error: message })}\n` : '', stderr: `error: ${message}${usage}` };
  }
}

import '#lib/twin/untraced-process.ts';
import { runCli } from '#lib/admin/cli.ts';
import { readHidden } from '#lib/admin/hidden-prompt.ts';

/** Operator CLI: `npm run --silent admin -- <command> [--json]`. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A value a command reads: typed at a prompt that does not echo when stdin is a terminal, else piped in. */
const input = (prompt?: string) => (process.stdin.isTTY && prompt ? readHidden(process.stdin, process.stderr, prompt) : readStdin());

/** A piece of an answer written as it is made, awaited until it has gone out, so a slow reader holds the command back. */
const output = (piece: string) =>
  new Promise<void>((resolve, reject) => process.stdout.write(piece, (error) => (error ? reject(error) : resolve())));

const result = await runCli(process.argv.slice(2), { stdin: input, terminal: process.stdout.isTTY === true, stdout: output });
process.stdout.write(result.stdout);
process.stderr.write(result.stderr);
process.exitCode = result.exitCode;

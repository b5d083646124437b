import '#lib/twin/untraced-process.ts';
import { runCli } from '#lib/admin/cli.ts';

/** Operator CLI: `npm run --silent admin -- <command> [--json]`. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const result = await runCli(process.argv.slice(2), { stdin: readStdin });
process.stdout.write(result.stdout);
process.stderr.write(result.stderr);
process.exitCode = result.exitCode;

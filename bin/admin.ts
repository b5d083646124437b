import { runCli } from '#lib/admin/cli.ts';

/** Operator CLI: `npm run --silent admin -- <command> [--json]`. */
const result = await runCli(process.argv.slice(2));
process.stdout.write(result.stdout);
process.stderr.write(result.stderr);
process.exitCode = result.exitCode;

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm run synth` as an operator runs it, with the project's cdk.json (feature flags all set, CloudFormation
 * Validate findings as errors) and cdk-nag: silent when all is well, and failing, naming the resource and the
 * property, when a CloudFormation schema rule is broken.
 */
/** A whole synth bundles about twenty functions twice each: tens of seconds on a quiet machine, minutes on a loaded one. */
const SYNTH_TIMEOUT_MS = 10 * 60_000;
const outputs: string[] = [];
afterAll(() => {
  for (const output of outputs) rmSync(output, { recursive: true, force: true });
});

/** Runs a command in the project folder with the region an operator's shell would give; resolves with its output. */
function run(command: string, args: string[], region: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, AWS_REGION: region, AWS_EC2_METADATA_DISABLED: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const outputDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'synth-'));
  outputs.push(dir);
  return dir;
};

describe('npm run synth', () => {
  it(
    'prints one empty line at most and succeeds, bundling every function into a fresh output folder, in eu-central-1',
    async () => {
      const out = outputDir();
      const { code, stdout, stderr } = await run('npm', ['run', '--silent', 'synth', '--', '-o', out], 'eu-central-1');
      // The CDK CLI ends an empty validation report with one line break, which lib/cdk/README.md states.
      expect({ code, stdout }).toEqual({ code: 0, stdout: '' });
      expect(['', '\n']).toContain(stderr);
      const template = readFileSync(join(out, 'WorkflowIngestPlatform.template.json'), 'utf8');
      expect(template).toContain('eu.amazon.nova-lite-v1:0');
      expect(template).not.toContain('us.amazon.nova-lite-v1:0');
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'fails, naming the resource and the property, when a CloudFormation schema rule is broken',
    async () => {
      const out = outputDir();
      const app = 'npx tsx test/fixtures/cdk/broken-app.ts';
      const { code, stdout, stderr } = await run('npx', ['cdk', 'synth', '--app', app, '--no-notices', '-q', '-o', out], 'us-east-1');
      expect(code).not.toBe(0);
      const said = stdout + stderr;
      expect(said).toContain(
        "ERROR InferenceProfileName: 'WorkflowIngestPlatform-amazon.nova-micro-v1:0' does not match pattern '^([0-9a-zA-Z][ _-]?)+$' (CloudFormation Validate)",
      );
      expect(said).toContain('WorkflowIngestPlatform/Engine/InferenceProfiles/amazon.nova-micro-v1:0');
    },
    SYNTH_TIMEOUT_MS,
  );
});

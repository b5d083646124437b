import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';

/**
 * `--stack` without any region the SDK can find: the CLI says how to give one before it sends anything (no region,
 * no endpoint, so nothing leaves the machine).
 */
describe('admin --stack without a region', () => {
  beforeEach(() => {
    vi.stubEnv('AWS_REGION', undefined);
    vi.stubEnv('AWS_DEFAULT_REGION', undefined);
    vi.stubEnv('AWS_PROFILE', undefined);
    vi.stubEnv('AWS_CONFIG_FILE', join(tmpdir(), 'no-such-aws-config'));
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', join(tmpdir(), 'no-such-aws-credentials'));
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('is a usage mistake naming --region and AWS_REGION', async () => {
    for (const argv of [
      ['links', 'list'],
      ['cost', 'report'],
    ]) {
      const result = await runCli([...argv, '--stack', 'Some-Stack', '--json']);
      expect(result.exitCode, result.stdout).toBe(2);
      const { error } = JSON.parse(result.stdout) as { error: string };
      expect(error).toBe('--stack Some-Stack needs its region: give --region R, or set AWS_REGION (or a region in your AWS profile)');
    }
  });
});

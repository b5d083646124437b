import { describe, expect, it } from 'vitest';
import { operationsModeOf } from '#lib/admin/target.ts';

/** What `--stack` makes of a stack's OperationsMode output, which decides the fixed items its cost report prices. */
describe("a stack's operations mode", () => {
  it('is the output when it names a mode, and full when the stack has no such output', () => {
    expect(operationsModeOf('S', 'lean')).toBe('lean');
    expect(operationsModeOf('S', 'full')).toBe('full');
    expect(operationsModeOf('S', undefined)).toBe('full');
  });

  it('refuses any other value, naming the stack, the output and the value', () => {
    expect(() => operationsModeOf('Some-Stack', 'LEAN')).toThrow(
      'Stack Some-Stack has output OperationsMode "LEAN", neither full nor lean',
    );
  });
});

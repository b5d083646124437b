import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { functionIdOf, routes } from '#functions/routes.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';

/**
 * `cdk deploy -c streamFlushPaddingBytes=N`: the padding of streamed writes, a deployment setting (0 by default) that
 * reaches the streaming routes' functions as STREAM_FLUSH_PADDING_BYTES. Templates only: no bundling, no cdk-nag
 * (stack.test.ts and cors.test.ts run it on the same constructs).
 */
function synthesize(context: Record<string, unknown> = {}) {
  const app = new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new PlatformStack(app, 'Padding', { env: { region: 'us-east-1' } });
  const template = Template.fromStack(stack);
  const functions = template.findResources('AWS::Lambda::Function');
  const paddingOf = (routeId: string) => {
    const logicalId = stack.getLogicalId(stack.api.functions[routeId]!.node.defaultChild as never);
    return functions[logicalId]!.Properties.Environment?.Variables?.STREAM_FLUSH_PADDING_BYTES as string | undefined;
  };
  const withPadding = Object.values(functions).filter(
    (fn) => fn.Properties.Environment?.Variables?.STREAM_FLUSH_PADDING_BYTES !== undefined,
  );
  return { paddingOf, withPadding };
}

const streaming = routes.filter((route) => route.streaming);

describe('the padding of streamed writes on AWS', () => {
  it("is 0 by default, set on every streaming route's function and on no other function", () => {
    const { paddingOf, withPadding } = synthesize();
    expect(streaming.length).toBeGreaterThan(0);
    for (const route of routes) expect(paddingOf(functionIdOf(route)), route.id).toBe(route.streaming ? '0' : undefined);
    expect(withPadding).toHaveLength(streaming.length);
  });

  it('takes -c streamFlushPaddingBytes=N (a string on the command line, a number in cdk.json)', () => {
    for (const route of streaming) expect(synthesize({ streamFlushPaddingBytes: '16384' }).paddingOf(functionIdOf(route))).toBe('16384');
    expect(synthesize({ streamFlushPaddingBytes: 262144 }).paddingOf(streaming[0]!.id)).toBe('262144');
  });

  it.each([['-1'], ['262145'], ['1.5'], ['16k'], ['0x10'], [true], [[1024]]])(
    'refuses %j at synth, naming the context value and its bounds',
    (value) => {
      expect(() => synthesize({ streamFlushPaddingBytes: value })).toThrow(
        /^CDK context streamFlushPaddingBytes must be a whole number of bytes from 0 to 262144, got /,
      );
    },
  );
});

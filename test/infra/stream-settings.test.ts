import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { functionIdOf, routes } from '#functions/routes.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';
import { MAX_OPEN_STREAMS_OUTPUT } from '#lib/cdk/stack-outputs.ts';
import { parseMaxOpenStreams, parseStreamWindowSeconds } from '#shared/http/stream-settings.ts';

/**
 * `cdk deploy -c streamWindowSeconds=N -c maxOpenStreams=N`: the stream window (300 s by default) reaches the functions
 * of the windowed stream routes as STREAM_WINDOW_SECONDS, the deployment's open streams (500 by default) every stream
 * route's function as MAX_OPEN_STREAMS and the stack's MaxOpenStreams output, which `admin verify` reads. Templates
 * only: no bundling, no cdk-nag.
 */
function synthesize(context: Record<string, unknown> = {}) {
  const app = new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new PlatformStack(app, 'Streams', { env: { region: 'us-east-1' } });
  const template = Template.fromStack(stack);
  const functions = template.findResources('AWS::Lambda::Function');
  const variableOf = (routeId: string, name: string) => {
    const logicalId = stack.getLogicalId(stack.api.functions[routeId]!.node.defaultChild as never);
    return functions[logicalId]!.Properties.Environment?.Variables?.[name] as string | undefined;
  };
  return { template, variableOf };
}

const windowed = routes.filter((route) => route.openStream === 'window').map((route) => route.id);
const streams = routes.filter((route) => route.openStream !== undefined).map((route) => route.id);

describe('the settings of the open streams on AWS', () => {
  it('are the defaults, on the stream routes only: the window on the windowed ones, the open streams on every one', () => {
    const { template, variableOf } = synthesize();
    expect(windowed.sort()).toEqual(['PublishedExecutionEvents', 'PublishedStreamExecution', 'PublishedStreamWorkflow']);
    expect(streams).toContain('PublishedStreamProbe');
    for (const route of routes) {
      expect(variableOf(functionIdOf(route), 'STREAM_WINDOW_SECONDS'), route.id).toBe(windowed.includes(route.id) ? '300' : undefined);
      expect(variableOf(functionIdOf(route), 'MAX_OPEN_STREAMS'), route.id).toBe(streams.includes(route.id) ? '500' : undefined);
    }
    template.hasOutput(MAX_OPEN_STREAMS_OUTPUT, { Value: '500' });
  });

  it('take -c streamWindowSeconds and -c maxOpenStreams (strings on the command line, numbers in cdk.json)', () => {
    const { template, variableOf } = synthesize({ streamWindowSeconds: '600', maxOpenStreams: 120 });
    for (const id of windowed) expect(variableOf(id, 'STREAM_WINDOW_SECONDS')).toBe('600');
    for (const id of streams) expect(variableOf(id, 'MAX_OPEN_STREAMS')).toBe('120');
    template.hasOutput(MAX_OPEN_STREAMS_OUTPUT, { Value: '120' });
  });

  it('grant each stream route read and write on the stream events table, where its slots are', () => {
    for (const route of routes.filter((candidate) => candidate.openStream)) expect(route.tables.streamEvents, route.id).toBe('readWrite');
  });

  it.each([['59'], ['841'], ['1.5'], ['5m'], [true]])('refuses a window of %j at synth, naming the setting and its bounds', (value) => {
    expect(() => synthesize({ streamWindowSeconds: value })).toThrow(
      /^CDK context streamWindowSeconds must be a whole number of seconds from 60 to 840, got /,
    );
  });

  it.each([['0'], ['10001'], ['-3'], ['many']])('refuses %j open streams at synth', (value) => {
    expect(() => synthesize({ maxOpenStreams: value })).toThrow(
      /^CDK context maxOpenStreams must be a whole number of streams from 1 to 10000, got /,
    );
  });

  it('read unset as the defaults, as the functions and npm start do', () => {
    expect(parseStreamWindowSeconds(undefined, 'STREAM_WINDOW_SECONDS')).toBe(300);
    expect(parseStreamWindowSeconds(' 840 ', 'STREAM_WINDOW_SECONDS')).toBe(840);
    expect(parseMaxOpenStreams('', 'MAX_OPEN_STREAMS')).toBe(500);
    expect(parseMaxOpenStreams(10_000, 'MAX_OPEN_STREAMS')).toBe(10_000);
  });
});

import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { functionIdOf, routes } from '#functions/routes.ts';
import { servesBrowsers } from '#shared/http/cors.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';

/**
 * `cdk deploy -c corsAllowedOrigins=...`: the template a deployment that lets two dashboards call the Published Workflow
 * API gets. One synthesis, with cdk-nag as on every `cdk synth`; assets are not bundled (the template is the subject).
 */
const ORIGINS = 'https://dashboard.example,http://localhost:5173';

let stack: PlatformStack;
let template: Template;
beforeAll(() => {
  const app = new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], corsAllowedOrigins: ORIGINS } });
  stack = new PlatformStack(app, 'Cors', { env: { region: 'us-east-1' } });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  // Throws on any finding nobody acknowledged, the OPTIONS methods' included.
  app.synth();
  template = Template.fromStack(stack);
});

const browserRoutes = routes.filter(servesBrowsers);
const logicalIdOf = (routeId: string) => stack.getLogicalId(stack.api.functions[routeId]!.node.defaultChild as never);
const optionsMethods = () =>
  Object.values(template.findResources('AWS::ApiGateway::Method')).filter((method) => method.Properties.HttpMethod === 'OPTIONS');
const invokes = (method: Record<string, any>, routeId: string) =>
  JSON.stringify(method.Properties.Integration.Uri).includes(`"${logicalIdOf(routeId)}"`);

describe('preflights on AWS', () => {
  it("gives each Published API resource one OPTIONS method, a Lambda proxy to its route's function, and the webhook API none", () => {
    const paths = [...new Set(browserRoutes.map((route) => route.path))];
    expect(Object.keys(stack.api.preflightMethods).sort()).toEqual([...paths].sort());
    expect(optionsMethods()).toHaveLength(paths.length);
    for (const route of browserRoutes) {
      const method = optionsMethods().find((candidate) => invokes(candidate, functionIdOf(route)));
      expect(method?.Properties, route.id).toMatchObject({
        AuthorizationType: 'NONE',
        Integration: { Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' },
      });
      // A streaming function answers through its streaming integration, preflights included.
      if (route.streaming) expect(method?.Properties.Integration, route.id).toMatchObject({ ResponseTransferMode: 'STREAM' });
    }
    for (const route of routes.filter((candidate) => !servesBrowsers(candidate))) {
      expect(
        optionsMethods().some((method) => invokes(method, functionIdOf(route))),
        route.id,
      ).toBe(false);
    }
  });

  it('uses no MOCK integration, which API Gateway answers with 500 under binary media types of every type', () => {
    const integrations = Object.values(template.findResources('AWS::ApiGateway::Method')).map(
      (method) => method.Properties.Integration?.Type,
    );
    expect(new Set(integrations)).toEqual(new Set(['AWS_PROXY']));
  });

  it('tells the Published API functions the origins, and no other function', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    for (const route of routes) {
      const variables = functions[logicalIdOf(functionIdOf(route))]!.Properties.Environment.Variables;
      expect(variables.CORS_ALLOWED_ORIGINS, route.id).toBe(servesBrowsers(route) ? ORIGINS : undefined);
    }
    const withOrigins = Object.values(functions).filter((fn) => fn.Properties.Environment?.Variables?.CORS_ALLOWED_ORIGINS !== undefined);
    expect(withOrigins).toHaveLength(new Set(browserRoutes.map(functionIdOf)).size);
  });
});

/** Each gateway response of a template, by its type: the headers it maps (name → value), `{}` for none. */
function gatewayResponseHeaders(source: Template): Record<string, Record<string, string>> {
  return Object.fromEntries(
    Object.values(source.findResources('AWS::ApiGateway::GatewayResponse')).map((response) => [
      response.Properties.ResponseType,
      Object.fromEntries(
        Object.entries((response.Properties.ResponseParameters ?? {}) as Record<string, string>).map(([name, value]) => [
          name.replace(/^gatewayresponse\.header\./, ''),
          value,
        ]),
      ),
    ]),
  );
}

describe("the gateway's own answers with several origins", () => {
  it('echo no Origin anywhere: a gateway response cannot check the list, so any page would be allowed', () => {
    expect(Object.keys(gatewayResponseHeaders(template)).sort()).toEqual([
      'DEFAULT_4XX',
      'DEFAULT_5XX',
      'MISSING_AUTHENTICATION_TOKEN',
      'THROTTLED',
    ]);
    expect(JSON.stringify(template.findResources('AWS::ApiGateway::GatewayResponse'))).not.toContain('method.request.header.Origin');
    expect(JSON.stringify(template.toJSON())).not.toContain('method.request.header.Origin');
  });

  it('carry no CORS header at all, nor a Vary that would suggest one: the throttle and the 5xx keep only their Retry-After', () => {
    expect(gatewayResponseHeaders(template)).toEqual({
      MISSING_AUTHENTICATION_TOKEN: {},
      THROTTLED: { 'Retry-After': "'1'" },
      DEFAULT_4XX: {},
      DEFAULT_5XX: { 'Retry-After': "'1'" },
    });
  });
});

describe("the gateway's own answers with one origin", () => {
  it('name that origin, a fixed value, with the exposed headers and Vary, on every gateway response', () => {
    const app = new App({
      builtinCloudFormationValidation: false,
      context: { 'aws:cdk:bundling-stacks': [], corsAllowedOrigins: 'https://dashboard.example' },
    });
    const single = Template.fromStack(new PlatformStack(app, 'OneOrigin', { env: { region: 'us-east-1' } }));
    const cors = {
      'Access-Control-Allow-Origin': "'https://dashboard.example'",
      'Access-Control-Expose-Headers': "'retry-after, x-execution-id, content-location'",
      Vary: "'Origin'",
    };
    expect(gatewayResponseHeaders(single)).toEqual({
      MISSING_AUTHENTICATION_TOKEN: cors,
      THROTTLED: { ...cors, 'Retry-After': "'1'" },
      DEFAULT_4XX: cors,
      DEFAULT_5XX: { ...cors, 'Retry-After': "'1'" },
    });
    expect(JSON.stringify(single.toJSON())).not.toContain('method.request.header.Origin');
  });
});

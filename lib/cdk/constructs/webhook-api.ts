import { CfnOutput, Stack } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { functionIdOf, type Route } from '#functions/routes.ts';
import { WEBHOOK_API_URL_OUTPUT } from '#lib/cdk/stack-outputs.ts';

export interface WebhookApiProps {
  /** The webhook routes (`gatewayOf(route) === 'httpApi'`). */
  readonly routes: readonly Route[];
  /** Each route's function, by function id. */
  readonly functions: Readonly<Record<string, IFunction>>;
  /** The function of the `$default` route: every request no route matches (it answers 404 in the API's error body). */
  readonly defaultFunctionId: string;
  readonly throttle: { rateLimit: number; burstLimit: number };
}

/**
 * One JSON line per request, only what an operator reads: when, who, which route and how it ended. The route is its
 * key (`POST /api/v1/webhooks/{token}/events`), never the path, which holds the token.
 */
export const WEBHOOK_ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  `{${[
    `"id":"$context.requestId"`,
    `"t":"$context.requestTime"`,
    `"ip":"$context.identity.sourceIp"`,
    `"route":"$context.routeKey"`,
    `"status":"$context.status"`,
    `"bytes":"$context.responseLength"`,
    `"ms":"$context.responseLatency"`,
    `"error":"$context.integrationErrorMessage"`,
  ].join(',')}}`,
);

/**
 * The Inbound Conversation Webhook API on an HTTP API (payload format 2.0): a third of a REST API's price per request,
 * and the webhook routes need nothing only a REST API has (they never stream, and their refusals come from the
 * functions). Its `$default` stage has no path: `WebhookApiUrl` is the OpenAPI document's `{webhook_base_url}`. An HTTP API's own
 * answers (throttle, failed or timed-out integration) cannot be shaped; functions/inbound/README.md says what a sender sees.
 */
export class WebhookApi extends Construct {
  public readonly httpApi: HttpApi;

  constructor(scope: Construct, id: string, props: WebhookApiProps) {
    super(scope, id);
    const integrationOf = (functionId: string) =>
      // No timeout set: an HTTP API integration's default is its maximum, 30 s (HTTP_API_TIMEOUT_SECONDS), which CDK's
      // own check (50 ms to 29 s) would refuse if it were written out.
      new HttpLambdaIntegration(`${functionId}Integration`, props.functions[functionId]!);
    const integrations = new Map<string, HttpLambdaIntegration>();
    const integration = (functionId: string) => {
      if (!integrations.has(functionId)) integrations.set(functionId, integrationOf(functionId));
      return integrations.get(functionId)!;
    };
    this.httpApi = new HttpApi(this, 'HttpApi', {
      apiName: `${Stack.of(this).stackName}-webhooks`,
      defaultIntegration: integration(props.defaultFunctionId),
      createDefaultStage: false,
    });
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.ONE_MONTH });
    this.httpApi.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: WEBHOOK_ACCESS_LOG_FORMAT },
    });
    for (const route of props.routes) {
      this.httpApi.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: integration(functionIdOf(route)),
      });
    }
    new CfnOutput(this, WEBHOOK_API_URL_OUTPUT, { key: WEBHOOK_API_URL_OUTPUT, value: this.httpApi.apiEndpoint });
  }
}

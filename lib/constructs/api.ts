import { CfnOutput, Stack } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Route } from '../../functions/routes.ts';
import type { Access, BucketName, TableName } from '../../functions/shared/resources.ts';
import { API_URL_OUTPUT } from '../stack-outputs.ts';
import type { Data } from './data.ts';
import { HandlerFunction } from './handler-function.ts';

export interface ApiProps {
  readonly routes: readonly Route[];
  readonly data: Data;
  /**
   * Stage-wide throttle, a backstop in front of the per-link and per-key limits the handlers enforce.
   * @default 200 requests/s steady, 400 burst
   */
  readonly throttle?: { rateLimit: number; burstLimit: number };
}

/** The REGIONAL REST API built from the route table: one small function per route, each granted only what its route declares. */
export class Api extends Construct {
  public readonly restApi: RestApi;
  public readonly functions: Record<string, HandlerFunction> = {};

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const throttle = props.throttle ?? { rateLimit: 200, burstLimit: 400 };
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.ONE_MONTH });

    this.restApi = new RestApi(this, 'RestApi', {
      restApiName: `${Stack.of(this).stackName}-api`,
      endpointTypes: [EndpointType.REGIONAL],
      cloudWatchRole: true,
      deployOptions: {
        stageName: 'prod',
        tracingEnabled: true,
        loggingLevel: MethodLoggingLevel.ERROR,
        throttlingRateLimit: throttle.rateLimit,
        throttlingBurstLimit: throttle.burstLimit,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
      },
    });
    // API Gateway answers an unknown path or method with 403 "Missing Authentication Token"; callers expect 404.
    this.restApi.addGatewayResponse('UnknownRoute', {
      type: ResponseType.MISSING_AUTHENTICATION_TOKEN,
      statusCode: '404',
      templates: { 'application/json': '{"message":"Not Found"}' },
    });
    // Every 429 carries Retry-After, including the stage throttle's.
    this.restApi.addGatewayResponse('Throttled', {
      type: ResponseType.THROTTLED,
      statusCode: '429',
      responseHeaders: { 'Retry-After': "'1'" },
    });

    for (const route of props.routes) {
      const fn = new HandlerFunction(this, route.id, { handler: route.handler });
      for (const [table, access] of Object.entries(route.tables) as [TableName, Access][]) {
        props.data.bindTable(fn, table, access);
      }
      for (const [bucket, access] of Object.entries(route.buckets ?? {}) as [BucketName, Access][]) {
        props.data.bindBucket(fn, bucket, access);
      }
      this.restApi.root.resourceForPath(route.path).addMethod(route.method, new LambdaIntegration(fn));
      this.functions[route.id] = fn;
    }

    new CfnOutput(this, API_URL_OUTPUT, { key: API_URL_OUTPUT, value: this.restApi.url });
  }
}

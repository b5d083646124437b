import { CfnOutput, Duration, Size, Stack } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  ResponseTransferMode,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  type Method,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import {
  BINARY_MEDIA_TYPES,
  functionIdOf,
  gatewayOf,
  routeById,
  routeFunctions,
  routeTimeoutSeconds,
  WEBHOOK_DEFAULT_ROUTE,
  type Route,
} from '#functions/routes.ts';
import type { Access, BucketGrant, BucketName, StateMachineName, TableName } from '#shared/resources.ts';
import { API_URL_OUTPUT, MAX_OPEN_STREAMS_OUTPUT } from '#lib/cdk/stack-outputs.ts';
import {
  GATEWAY_ERROR_TEMPLATE,
  GATEWAY_MESSAGES,
  GATEWAY_RETRY_AFTER_SECONDS,
  gatewayCorsHeaders,
  gatewayErrorBody,
} from '#lib/cdk/gateway-responses.ts';
import { CORS_ALLOWED_ORIGINS_ENV, parseCorsOrigins, servesBrowsers } from '#shared/http/cors.ts';
import { MINIMUM_COMPRESSION_BYTES } from '#shared/http/gateway-compression.ts';
import { parseStreamFlushPadding, STREAM_FLUSH_PADDING_ENV } from '#shared/http/stream-padding.ts';
import { MAX_OPEN_STREAMS_ENV, parseMaxOpenStreams, parseStreamWindowSeconds, STREAM_WINDOW_ENV } from '#shared/http/stream-settings.ts';
import type { Data } from './data.ts';
import { HandlerFunction } from './handler-function.ts';
import { bindStateMachines, type StateMachineOwner } from './state-machines.ts';
import { STAGE_THROTTLE } from '#shared/rate-limits.ts';
import { WebhookApi } from './webhook-api.ts';

export interface ApiProps {
  readonly routes: readonly Route[];
  readonly data: Data;
  /** The constructs that own the state machines routes may declare. */
  readonly stateMachines: Readonly<Record<StateMachineName, StateMachineOwner>>;
  /**
   * Stage-wide throttle, a backstop in front of the per-link and per-key limits the handlers enforce.
   * @default 200 requests/s steady, 400 burst
   */
  readonly throttle?: { rateLimit: number; burstLimit: number };
  /**
   * Origins whose pages may call the Published Workflow API from a browser (CORS). Each browser-serving resource
   * gets an OPTIONS method integrated with its route's function (a Lambda proxy like every route: under binary media
   * types of every type API Gateway is reported to answer MOCK integrations with 500), its functions get
   * `CORS_ALLOWED_ORIGINS`, and with exactly one origin the gateway responses carry CORS headers naming it.
   * @default CDK context `corsAllowedOrigins` (`cdk deploy -c corsAllowedOrigins=https://a.example,https://b.example`), else none: no CORS
   */
  readonly corsAllowedOrigins?: readonly string[];
  /**
   * Bytes of filler after each streamed write that must reach the client now (an SSE heartbeat, a burst of events,
   * the blocking execute's whitespace), 0 to 262144: what `admin verify` recommends for a stage that holds small
   * streamed writes. Every streaming route's function gets it as `STREAM_FLUSH_PADDING_BYTES`.
   * @default CDK context `streamFlushPaddingBytes` (`cdk deploy -c streamFlushPaddingBytes=16384`), else 0: no filler
   */
  readonly streamFlushPaddingBytes?: number;
  /**
   * The stream window: the longest one invocation serves a stream (SSE) before it ends it with `resume`, 60 to 840
   * seconds. The functions of the windowed stream routes get it as `STREAM_WINDOW_SECONDS`.
   * @default CDK context `streamWindowSeconds` (`cdk deploy -c streamWindowSeconds=600`), else 300
   */
  readonly streamWindowSeconds?: number;
  /**
   * Streams the deployment serves at once, all keys together (each holds one unit of the account's Lambda concurrency).
   * Every function of a stream route gets it as `MAX_OPEN_STREAMS`; the stack's `MaxOpenStreams` output names it.
   * @default CDK context `maxOpenStreams` (`cdk deploy -c maxOpenStreams=200`), else 500
   */
  readonly maxOpenStreams?: number;
}

/**
 * One JSON line per request. The route is logged as its resource path (`/api/v1/webhooks/{token}/events`), never
 * the request path (`$context.path`), which holds the webhook token.
 */
export const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  `{${[
    `"requestId":"${AccessLogField.contextRequestId()}"`,
    `"requestTime":"${AccessLogField.contextRequestTime()}"`,
    `"ip":"${AccessLogField.contextIdentitySourceIp()}"`,
    `"httpMethod":"${AccessLogField.contextHttpMethod()}"`,
    `"resourcePath":"${AccessLogField.contextResourcePath()}"`,
    `"status":"${AccessLogField.contextStatus()}"`,
    `"protocol":"${AccessLogField.contextProtocol()}"`,
    `"responseLength":"${AccessLogField.contextResponseLength()}"`,
    `"responseLatency":"${AccessLogField.contextResponseLatency()}"`,
    `"integrationLatency":"${AccessLogField.contextIntegrationLatency()}"`,
    `"integrationStatus":"${AccessLogField.contextIntegrationStatus()}"`,
    `"errorType":"${AccessLogField.contextErrorResponseType()}"`,
    // Already a quoted JSON string.
    `"errorMessage":${AccessLogField.contextErrorMessageString()}`,
    `"integrationError":"${AccessLogField.contextIntegrationErrorMessage()}"`,
  ].join(',')}}`,
);

/**
 * The two APIs built from the route table: the Published Workflow API's REGIONAL REST API, and the webhook API's HTTP
 * API (webhook-api.ts). One small function per route (each API's documentation routes share one), each granted only
 * what its routes declare.
 */
export class Api extends Construct {
  public readonly restApi: RestApi;
  public readonly webhookApi: WebhookApi;
  /** By function id (functionIdOf). */
  public readonly functions: Record<string, HandlerFunction> = {};
  /** Each route's method, by route id. */
  public readonly methods: Record<string, Method> = {};
  /** The OPTIONS method of each browser-serving resource, by resource path; none without CORS origins. */
  public readonly preflightMethods: Record<string, Method> = {};

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const throttle = props.throttle ?? STAGE_THROTTLE;
    const corsAllowedOrigins =
      props.corsAllowedOrigins ?? parseCorsOrigins(this.node.tryGetContext('corsAllowedOrigins'), 'CDK context corsAllowedOrigins');
    const streamFlushPaddingBytes = parseStreamFlushPadding(
      props.streamFlushPaddingBytes ?? this.node.tryGetContext('streamFlushPaddingBytes'),
      props.streamFlushPaddingBytes === undefined ? 'CDK context streamFlushPaddingBytes' : 'streamFlushPaddingBytes',
    );
    const streamWindowSeconds = parseStreamWindowSeconds(
      props.streamWindowSeconds ?? this.node.tryGetContext('streamWindowSeconds'),
      props.streamWindowSeconds === undefined ? 'CDK context streamWindowSeconds' : 'streamWindowSeconds',
    );
    const maxOpenStreams = parseMaxOpenStreams(
      props.maxOpenStreams ?? this.node.tryGetContext('maxOpenStreams'),
      props.maxOpenStreams === undefined ? 'CDK context maxOpenStreams' : 'maxOpenStreams',
    );
    // With one allowed origin, CORS headers ride on every gateway response: without them its page sees a throttle or a
    // 502 as `Failed to fetch`. With several there are none: a gateway response cannot check the list (gateway-responses.ts).
    // Without headers a response stays exactly as it was (an empty map would still change the deployment).
    const corsHeaders = Object.fromEntries(
      Object.entries(gatewayCorsHeaders(corsAllowedOrigins)).map(([name, value]) => [name, `'${value}'`]),
    );
    const gatewayHeaders = (own: Record<string, string> = {}) => {
      const headers = { ...corsHeaders, ...own };
      return Object.keys(headers).length > 0 ? headers : undefined;
    };
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.ONE_MONTH });

    this.restApi = new RestApi(this, 'RestApi', {
      restApiName: `${Stack.of(this).stackName}-api`,
      endpointTypes: [EndpointType.REGIONAL],
      binaryMediaTypes: [...BINARY_MEDIA_TYPES],
      // Buffered answers from 1 KB go out gzip- or deflate-encoded to a caller that accepts it (the OpenAPI documents
      // shrink to an eighth); streamed ones never are. The twin compresses the same way (gateway-compression.ts).
      minCompressionSize: Size.bytes(MINIMUM_COMPRESSION_BYTES),
      cloudWatchRole: true,
      deployOptions: {
        stageName: 'prod',
        // Webhook tokens are part of the request path, which API Gateway's X-Ray segment records whole; a REST
        // API cannot mask it, and stage tracing is all or nothing. The functions keep active tracing (their
        // segments carry no URL), so a trace starts at the function.
        tracingEnabled: false,
        // Execution logs are off for every method: they can write the request path (the token) and the gateway
        // cannot exclude paths, including unknown paths under a token. The access log below covers every request.
        loggingLevel: MethodLoggingLevel.OFF,
        dataTraceEnabled: false,
        throttlingRateLimit: throttle.rateLimit,
        throttlingBurstLimit: throttle.burstLimit,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: ACCESS_LOG_FORMAT,
      },
    });
    // API Gateway answers an unknown path or method with 403 "Missing Authentication Token"; callers expect 404.
    this.restApi.addGatewayResponse('UnknownRoute', {
      type: ResponseType.MISSING_AUTHENTICATION_TOKEN,
      statusCode: '404',
      responseHeaders: gatewayHeaders(),
      templates: { 'application/json': gatewayErrorBody(GATEWAY_MESSAGES.unknownRoute) },
    });
    // Every 429 and 5xx carries Retry-After, including the gateway's own.
    const retryAfter = { 'Retry-After': `'${GATEWAY_RETRY_AFTER_SECONDS}'` };
    this.restApi.addGatewayResponse('Throttled', {
      type: ResponseType.THROTTLED,
      statusCode: '429',
      responseHeaders: gatewayHeaders(retryAfter),
      templates: { 'application/json': gatewayErrorBody(GATEWAY_MESSAGES.throttled) },
    });
    // Whatever else the gateway answers by itself (a failed or timed-out integration, an oversized request) in the same body.
    const templates = { 'application/json': GATEWAY_ERROR_TEMPLATE };
    this.restApi.addGatewayResponse('Other4xx', { type: ResponseType.DEFAULT_4XX, responseHeaders: gatewayHeaders(), templates });
    this.restApi.addGatewayResponse('Other5xx', { type: ResponseType.DEFAULT_5XX, responseHeaders: gatewayHeaders(retryAfter), templates });

    for (const declared of routeFunctions(props.routes)) {
      // A streaming route holds the response up to 15 minutes (blocking execute) unless it bounds its own time; its function runs as long.
      const fn = new HandlerFunction(this, declared.id, {
        handler: declared.handler,
        timeout: Duration.seconds(routeTimeoutSeconds(declared)),
        // The webhook API's functions: Lambda's START/END/REPORT lines would be most of each request's log bytes.
        platformLines: declared.routes.every((route) => gatewayOf(route) === 'httpApi') ? 'quiet' : 'all',
      });
      for (const [table, access] of Object.entries(declared.tables) as [TableName, Access][]) {
        props.data.bindTable(fn, table, access);
      }
      for (const [bucket, grant] of Object.entries(declared.buckets ?? {}) as [BucketName, BucketGrant][]) {
        props.data.bindBucket(fn, bucket, grant);
      }
      bindStateMachines(fn, declared.stateMachines, props.stateMachines);
      // Set on every streaming function, 0 included: what the deployment pads its streamed writes with is on record.
      if (declared.streaming) fn.addEnvironment(STREAM_FLUSH_PADDING_ENV, String(streamFlushPaddingBytes));
      // A stream route's slots are counted against the deployment's open streams; a windowed one ends at its window.
      if (declared.openStream) fn.addEnvironment(MAX_OPEN_STREAMS_ENV, String(maxOpenStreams));
      if (declared.openStream === 'window') fn.addEnvironment(STREAM_WINDOW_ENV, String(streamWindowSeconds));
      if (corsAllowedOrigins.length > 0 && declared.routes.some(servesBrowsers)) {
        fn.addEnvironment(CORS_ALLOWED_ORIGINS_ENV, corsAllowedOrigins.join(','));
      }
      this.functions[declared.id] = fn;
    }

    for (const route of props.routes.filter((candidate) => gatewayOf(candidate) === 'restApi')) {
      const fn = this.functions[functionIdOf(route)]!;
      const timeout = Duration.seconds(routeTimeoutSeconds(route));
      const integration = route.streaming
        ? new LambdaIntegration(fn, { responseTransferMode: ResponseTransferMode.STREAM, timeout })
        : new LambdaIntegration(fn);
      const resource = this.restApi.root.resourceForPath(route.path);
      this.methods[route.id] = resource.addMethod(route.method, integration);
      if (corsAllowedOrigins.length > 0 && servesBrowsers(route)) {
        // The resource's first route answers its preflights (functions/shared/http/cors.ts), through its own integration.
        this.preflightMethods[route.path] ??= resource.addMethod('OPTIONS', integration);
      }
    }

    const webhookRoutes = props.routes.filter((route) => gatewayOf(route) === 'httpApi');
    this.webhookApi = new WebhookApi(this, 'Webhooks', {
      routes: webhookRoutes,
      functions: this.functions,
      defaultFunctionId: functionIdOf(routeById(WEBHOOK_DEFAULT_ROUTE)),
      throttle,
    });

    new CfnOutput(this, API_URL_OUTPUT, { key: API_URL_OUTPUT, value: this.restApi.url });
    new CfnOutput(this, MAX_OPEN_STREAMS_OUTPUT, { key: MAX_OPEN_STREAMS_OUTPUT, value: String(maxOpenStreams) });
  }
}

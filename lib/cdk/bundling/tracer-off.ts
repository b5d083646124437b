/**
 * What `@aws-lambda-powertools/tracer` means inside a Lambda bundle unless the app is synthesized with
 * `-c sdkTracing=true` (esbuild `alias`, see bundle.ts). The real Tracer loads the X-Ray SDK (~99 KB, about 30 ms
 * of every cold start here) and its async hooks cost about a tenth of each request's CPU. Without it, Lambda's
 * active tracing still records each invocation (initialization, invocation, overhead) and the Logger still writes
 * the trace id; only the subsegments per AWS SDK call are missing, which `sdkTracing` brings back.
 */
export class Tracer {
  constructor(_options?: unknown) {}

  public isTracingEnabled(): boolean {
    return false;
  }

  public captureAWSv3Client<Client>(client: Client): Client {
    return client;
  }
}

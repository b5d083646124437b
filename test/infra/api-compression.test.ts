import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { MINIMUM_COMPRESSION_BYTES } from '#shared/http/gateway-compression.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';

/**
 * Payload compression on the REST API (docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-gzip-compression-decompression.html):
 * without MinimumCompressionSize API Gateway compresses nothing, and the OpenAPI documents (83 KB) go out whole. The
 * twin compresses from the same size (lib/twin/http-server.ts). Templates only: no bundling, no cdk-nag.
 */
describe('the REST API', () => {
  it('compresses buffered answers from MINIMUM_COMPRESSION_BYTES (1 KB) for callers that accept it', () => {
    const app = new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } });
    const template = Template.fromStack(new PlatformStack(app, 'Compression', { env: { region: 'us-east-1' } }));
    const apis = Object.values(template.findResources('AWS::ApiGateway::RestApi'));

    expect(MINIMUM_COMPRESSION_BYTES).toBe(1024);
    expect(apis).toHaveLength(1);
    expect(apis[0]!.Properties.MinimumCompressionSize).toBe(MINIMUM_COMPRESSION_BYTES);
  });
});

import type { CostUnits } from '#shared/metering/cost-meter.ts';

/**
 * AWS's published us-east-1 list prices, first tier, written here from each page and not from the sheet, so that a
 * sheet priced in the wrong unit (a GB-second price per GB-millisecond, a per-1,000 price per request) fails. Each
 * figure is what its page quotes, with the page; `perMetered` says how many of the meter's units the quoted unit holds.
 */
const GB = 2 ** 30;
export interface Published {
  usd: number;
  quoted: string;
  perMetered: number;
  page: string;
}
const free = { usd: 0, quoted: 'not billed', perMetered: 1, page: 'billed through other lines' };

export const PUBLISHED: Record<keyof CostUnits, Published[]> = {
  apiRequests: [{ usd: 3.5, quoted: 'per million REST API requests', perMetered: 1e6, page: 'aws.amazon.com/api-gateway/pricing' }],
  httpApiRequests: [
    {
      usd: 1.0,
      quoted: 'per million HTTP API requests, in 512 KB increments',
      perMetered: 1e6,
      page: 'aws.amazon.com/api-gateway/pricing',
    },
  ],
  lambdaInvocations: [{ usd: 0.2, quoted: 'per million requests', perMetered: 1e6, page: 'aws.amazon.com/lambda/pricing' }],
  // The meter counts GB-milliseconds; the page quotes arm64 duration per GB-second.
  lambdaGbMs: [{ usd: 0.0000133334, quoted: 'per GB-second, arm64', perMetered: 1000, page: 'aws.amazon.com/lambda/pricing' }],
  dynamoReadUnits: [
    { usd: 0.125, quoted: 'per million read request units', perMetered: 1e6, page: 'aws.amazon.com/dynamodb/pricing/on-demand' },
  ],
  dynamoWriteUnits: [
    { usd: 0.625, quoted: 'per million write request units', perMetered: 1e6, page: 'aws.amazon.com/dynamodb/pricing/on-demand' },
  ],
  s3WriteRequests: [
    { usd: 0.005, quoted: 'per 1,000 PUT, COPY, POST, LIST requests', perMetered: 1000, page: 'aws.amazon.com/s3/pricing' },
  ],
  s3ReadRequests: [
    { usd: 0.0004, quoted: 'per 1,000 GET, SELECT and all other requests', perMetered: 1000, page: 'aws.amazon.com/s3/pricing' },
  ],
  stepFunctionsRequests: [free],
  stateTransitions: [
    { usd: 0.025, quoted: 'per 1,000 state transitions', perMetered: 1000, page: 'aws.amazon.com/step-functions/pricing' },
  ],
  modelCalls: [free],
  inputTokens: [free],
  outputTokens: [free],
  toolCalls: [free],
  images: [free],
  callbackDeliveries: [free],
  storedBytes: [
    { usd: 0.25, quoted: 'per GB-month, table storage', perMetered: GB, page: 'aws.amazon.com/dynamodb/pricing/on-demand' },
    { usd: 0.2, quoted: 'per GB-month, continuous backups (PITR)', perMetered: GB, page: 'aws.amazon.com/dynamodb/pricing/on-demand' },
  ],
  s3StoredBytes: [{ usd: 0.023, quoted: 'per GB-month, S3 Standard, first 50 TB', perMetered: GB, page: 'aws.amazon.com/s3/pricing' }],
  logBytes: [
    { usd: 0.5, quoted: 'per GB ingested (vended and standard logs)', perMetered: GB, page: 'aws.amazon.com/cloudwatch/pricing' },
    { usd: 0.03, quoted: 'per GB-month stored', perMetered: GB, page: 'aws.amazon.com/cloudwatch/pricing' },
  ],
  dataTransferOutBytes: [
    { usd: 0.09, quoted: 'per GB out to the internet, first 10 TB', perMetered: GB, page: 'aws.amazon.com/ec2/pricing/on-demand' },
  ],
  eventBridgeEvents: [{ usd: 1.0, quoted: 'per million custom events', perMetered: 1e6, page: 'aws.amazon.com/eventbridge/pricing' }],
  webhookEvents: [free],
  runsFinished: [free],
};

/** Per million input and output tokens, and per image, from aws.amazon.com/bedrock/pricing (on-demand). */
export const PUBLISHED_MODELS: Record<string, { input: number; output: number } | { images: Record<string, number> }> = {
  'amazon.nova-micro-v1:0': { input: 0.035, output: 0.14 },
  'amazon.nova-lite-v1:0': { input: 0.06, output: 0.24 },
  'amazon.nova-pro-v1:0': { input: 0.8, output: 3.2 },
  'amazon.nova-2-lite-v1:0': { input: 0.3, output: 2.5 },
  'global.anthropic.claude-haiku-4-5-20251001-v1:0': { input: 1.0, output: 5.0 },
  // Geographic and in-region profiles of Claude Haiku 4.5: 10 % over global.
  'anthropic.claude-haiku-4-5-20251001-v1:0': { input: 1.1, output: 5.5 },
  'anthropic.claude-3-5-haiku-20241022-v1:0': { input: 0.8, output: 4.0 },
  'amazon.nova-canvas-v1:0': { images: { standard_1024: 0.04, standard_2048: 0.06, premium_1024: 0.06, premium_2048: 0.08 } },
};

/** CloudWatch, KMS and SQS, per month or per million requests (aws.amazon.com/cloudwatch/pricing, /kms/pricing, /sqs/pricing). */
export const PUBLISHED_MONTHLY = {
  alarm_metric: 0.1,
  dashboard: 3.0,
  kms_key: 1.0,
  custom_metric: 0.3,
  dead_letter_queue_per_million: 0.4,
};

/** X-Ray, per million traces recorded (aws.amazon.com/xray/pricing). */
export const PUBLISHED_XRAY_PER_MILLION_TRACES = 5.0;

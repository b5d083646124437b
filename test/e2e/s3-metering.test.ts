import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyCostUnits, runMetered, type Metering } from '#shared/metering/cost-meter.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * What the functions' S3 client meters per request, against the twin's S3: S3 bills PUT, COPY, POST and LIST as
 * tier-1 requests and GET as tier 2 (aws.amazon.com/s3/pricing); only a PUT stores bytes.
 */
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
}, 60_000);
afterAll(() => twin?.close());

describe("the functions' S3 client", () => {
  const metered = async (send: (s3: typeof import('#shared/clients/s3.ts').s3) => Promise<unknown>) => {
    const { s3 } = await import('#shared/clients/s3.ts');
    const metering: Metering = { units: emptyCostUnits(), startedAtMs: performance.now(), memoryMb: 256 };
    await runMetered(metering, () => send(s3));
    return metering.units;
  };

  it('meters a PUT as a tier-1 request storing its bytes, a GET as tier 2, a LIST as tier 1 storing nothing', async () => {
    const Bucket = twin.twin.bucket;
    const put = await metered((s3) => s3.send(new PutObjectCommand({ Bucket, Key: 'metering/a.json', Body: 'x'.repeat(300) })));
    expect(put).toMatchObject({ s3WriteRequests: 1, s3ReadRequests: 0, s3StoredBytes: 300 });
    const get = await metered(async (s3) =>
      (await s3.send(new GetObjectCommand({ Bucket, Key: 'metering/a.json' }))).Body!.transformToString(),
    );
    expect(get).toMatchObject({ s3WriteRequests: 0, s3ReadRequests: 1, s3StoredBytes: 0 });
    const list = await metered((s3) => s3.send(new ListObjectsV2Command({ Bucket, Prefix: 'metering/' })));
    expect(list).toMatchObject({ s3WriteRequests: 1, s3ReadRequests: 0, s3StoredBytes: 0 });
  });
});

import { describe, expect, it } from 'vitest';
import { runCostCommand } from '#lib/admin/cost-commands.ts';
import type { AdminTarget } from '#lib/admin/target.ts';
import { NoPriceSheet } from '#lib/pricing/price-sheet.ts';

/**
 * A stack's report is priced with its own region's sheet, the region the CLI found for the stack (the SDK's chain:
 * --region, AWS_REGION, the profile), never AWS_REGION alone; a region without a sheet is refused before any read.
 */
describe('cost report and estimate of a stack in a region without a price sheet', () => {
  const unread = new Proxy({} as AdminTarget['dynamo'], {
    get: () => {
      throw new Error('read the usage table before refusing');
    },
  });
  const frankfurt = { deployed: true, region: 'eu-central-1', dynamo: unread, operationsMode: 'full' } as unknown as AdminTarget;

  it('is refused naming the region and the sheets there are, whatever AWS_REGION says', async () => {
    const before = process.env.AWS_REGION;
    process.env.AWS_REGION = 'us-east-1';
    try {
      for (const args of [['report'], ['estimate']]) {
        const refused = runCostCommand(frankfurt, args, { json: true }, false);
        await expect(refused).rejects.toBeInstanceOf(NoPriceSheet);
        await expect(runCostCommand(frankfurt, args, { json: true }, false)).rejects.toThrow(
          /^No price sheet for eu-central-1: lib\/pricing has us-east-1;/,
        );
      }
    } finally {
      if (before === undefined) delete process.env.AWS_REGION;
      else process.env.AWS_REGION = before;
    }
  });
});

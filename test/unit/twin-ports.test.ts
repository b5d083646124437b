import { describe, expect, it } from 'vitest';
import { parseTwinPort, TWIN_PORTS } from '#lib/twin/twin-ports.ts';

/** `PORT` as `npm start` reads it: the twin takes PORT and the nine ports after it, so a PORT must leave room for them. */
describe('parseTwinPort', () => {
  it('takes unset as 3000, 0 as free ports, and the highest PORT whose nine followers exist', () => {
    expect(parseTwinPort(undefined)).toBe(3000);
    expect(parseTwinPort('')).toBe(3000);
    expect(parseTwinPort('0')).toBe(0);
    expect(parseTwinPort(' 4000 ')).toBe(4000);
    expect(parseTwinPort('65526')).toBe(65526);
  });

  it('lists every port the twin takes, the API first, each at its own offset', () => {
    expect(TWIN_PORTS.map(({ offset }) => offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(TWIN_PORTS.map(({ name }) => name)).toEqual([
      'API',
      'DynamoDB',
      'S3',
      'Step Functions',
      'SSM',
      'Bedrock Runtime',
      'Cost Explorer',
      'Lambda',
      'CloudWatch',
      'Webhook API',
    ]);
  });

  it('refuses a PORT without room for the ports after it, naming the ports needed', () => {
    expect(() => parseTwinPort('65533')).toThrow(
      "PORT 65533 leaves no room for the twin's ports: it takes PORT to PORT+9 (API 65533, DynamoDB 65534, S3 65535, Step Functions 65536, SSM 65537, " +
        'Bedrock Runtime 65538, Cost Explorer 65539, Lambda 65540, CloudWatch 65541, Webhook API 65542) and ports end at 65535; use 1 to 65526, ' +
        'or 0 for free ports',
    );
    expect(() => parseTwinPort('65527')).toThrow(/^PORT 65527 leaves no room/);
  });

  it.each(['-1', '3000.5', 'abc', '0x10', '1e3', '70000'])('refuses %s as no port number', (value) => {
    expect(() => parseTwinPort(value)).toThrow(
      `PORT must be a whole number from 1 to 65526 (the twin takes PORT to PORT+9), or 0 for free ports, got ${JSON.stringify(value)}`,
    );
  });
});

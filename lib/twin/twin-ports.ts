/**
 * The ports the twin listens on, by offset from `PORT`: the Published API, a front door per AWS service it stands in
 * for, then the webhook API (an HTTP API of its own, as on AWS).
 * `startLocalTwin` binds each at its offset, and `npm start` refuses a PORT whose followers pass the last port.
 */
export const TWIN_PORTS = [
  { service: 'api', name: 'API', offset: 0 },
  { service: 'dynamodb', name: 'DynamoDB', offset: 1 },
  { service: 's3', name: 'S3', offset: 2 },
  { service: 'stepFunctions', name: 'Step Functions', offset: 3 },
  { service: 'ssm', name: 'SSM', offset: 4 },
  { service: 'bedrock', name: 'Bedrock Runtime', offset: 5 },
  { service: 'costExplorer', name: 'Cost Explorer', offset: 6 },
  { service: 'lambda', name: 'Lambda', offset: 7 },
  { service: 'cloudWatch', name: 'CloudWatch', offset: 8 },
  { service: 'webhooks', name: 'Webhook API', offset: 9 },
] as const;

export type TwinPortService = (typeof TWIN_PORTS)[number]['service'];

const DEFAULT_TWIN_PORT = 3000;
const LAST_PORT = 65535;
const LAST_OFFSET = Math.max(...TWIN_PORTS.map(({ offset }) => offset));
/** The highest PORT whose followers are all ports. */
const MAX_TWIN_PORT = LAST_PORT - LAST_OFFSET;

/** The port of `service` when the API listens on `port` (0: every listener picks a free port of its own). */
export function twinPortOf(port: number, service: TwinPortService): number {
  return port === 0 ? 0 : port + TWIN_PORTS.find((entry) => entry.service === service)!.offset;
}

/** Throws unless `port` is 0 or leaves room for every port the twin takes after it, naming them. */
export function checkTwinPort(port: number): void {
  if (!Number.isSafeInteger(port) || port < 0 || port > LAST_PORT) {
    throw new Error(
      `PORT must be a whole number from 1 to ${MAX_TWIN_PORT} (the twin takes PORT to PORT+${LAST_OFFSET}), or 0 for free ports, got ` +
        `${JSON.stringify(String(port))}`,
    );
  }
  if (port > MAX_TWIN_PORT) {
    const needed = TWIN_PORTS.map(({ name, offset }) => `${name} ${port + offset}`).join(', ');
    throw new Error(
      `PORT ${port} leaves no room for the twin's ports: it takes PORT to PORT+${LAST_OFFSET} (${needed}) and ports end at ` +
        `${LAST_PORT}; use 1 to ${MAX_TWIN_PORT}, or 0 for free ports`,
    );
  }
}

/** `PORT` as `npm start` reads it: unset is 3000; anything but a whole number with room for the ports after it is refused. */
export function parseTwinPort(value: string | undefined): number {
  const text = value?.trim() ?? '';
  if (text === '') return DEFAULT_TWIN_PORT;
  if (!/^\d{1,5}$/.test(text) || Number(text) > LAST_PORT) {
    throw new Error(
      `PORT must be a whole number from 1 to ${MAX_TWIN_PORT} (the twin takes PORT to PORT+${LAST_OFFSET}), or 0 for free ports, got ` +
        `${JSON.stringify(value)}`,
    );
  }
  const port = Number(text);
  checkTwinPort(port);
  return port;
}

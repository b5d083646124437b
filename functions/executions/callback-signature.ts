import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): `webhook-signature: v1,<base64 HMAC-SHA256
 * of "id.timestamp.body">`. A `whsec_`-prefixed secret is base64 per that spec (verify with
 * `new Webhook(secret)`); any other secret is used as its UTF-8 bytes (verify with `new Webhook(secret, { format: 'raw' })`).
 */
function signingKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

export function webhookHeaders(secret: string | null, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const headers: Record<string, string> = { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds) };
  if (secret) {
    const signature = createHmac('sha256', signingKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
    headers['webhook-signature'] = `v1,${signature}`;
  }
  return headers;
}

import * as z from '#shared/zod.ts';

/** A personal webhook link (webhook spec, sections 1 and 3). */
export const connectorTypeSchema = z.enum(['calls', 'dialogs']);
export type ConnectorType = z.infer<typeof connectorTypeSchema>;
export type LinkState = 'issued' | 'bound' | 'revoked';

export const LINK_TOKEN_PREFIX = 'whk_';
export const LINK_TOKEN_PATTERN = /^whk_[A-Za-z0-9_-]{43}$/;

export interface Link {
  link_id: string;
  state: LinkState;
  connector_type: ConnectorType;
  source_id?: string;
  allow_hosts: string[];
  token_prefix: string;
  current_token_hash: string;
  created_at: string;
  bound_at?: string;
  reissued_at?: string;
  revoked_at?: string;
  channel_values?: Set<string>;
  direction_values?: Set<string>;
}

/** Which event type each link variant accepts. */
export const EVENT_TYPE_OF_CONNECTOR = { calls: 'call', dialogs: 'text' } as const;

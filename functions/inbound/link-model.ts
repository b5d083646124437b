import * as z from '#shared/zod.ts';

/** A personal webhook link (functions/inbound/README.md#the-contract-in-brief). */
export const connectorTypeSchema = z.enum(['calls', 'dialogs']);
export type ConnectorType = z.infer<typeof connectorTypeSchema>;
type LinkState = 'issued' | 'bound' | 'revoked';

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
  /** Every token issued for the link (current and reissued-from), whose items carry a copy of it. */
  token_hashes?: Set<string>;
}

/** Which event type each link variant accepts. */
export const EVENT_TYPE_OF_CONNECTOR = { calls: 'call', dialogs: 'text' } as const;

/**
 * What a webhook request needs of its link. Every token item carries a copy, so one read of the token answers a
 * request; the link item stays the authority (a copy that says anything but bound or revoked is checked against it).
 */
export type LinkView = Pick<
  Link,
  'link_id' | 'state' | 'connector_type' | 'source_id' | 'allow_hosts' | 'channel_values' | 'direction_values'
>;

export function linkView(link: LinkView): LinkView {
  const { link_id, state, connector_type, source_id, allow_hosts, channel_values, direction_values } = link;
  return { link_id, state, connector_type, source_id, allow_hosts, channel_values, direction_values };
}

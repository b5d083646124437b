import { SCOPES, type Scope } from '#shared/access.ts';
import * as z from '#shared/zod.ts';

/** Published Workflow API keys: a key holds scopes, or all of them (`*`), and presets of them. */
const ALL_SCOPES = '*';
export const scopeSchema = z.union([z.enum(SCOPES), z.literal(ALL_SCOPES)]);
export type GrantedScope = z.infer<typeof scopeSchema>;

const READ_PRESET: GrantedScope[] = ['workflows.read', 'executions.read', 'events.subscribe'];
export const PRESETS: Record<'read' | 'execute' | 'full', GrantedScope[]> = {
  read: READ_PRESET,
  execute: [...READ_PRESET, 'workflows.execute', 'workflows.stream'],
  full: [ALL_SCOPES],
};

export function grants(scopes: readonly GrantedScope[], needed: Scope): boolean {
  return scopes.includes(ALL_SCOPES) || scopes.includes(needed);
}

/** The record of a key (`keyid#<id>`); the value itself is never stored. */
export interface ApiKeyRecord {
  key_id: string;
  name: string;
  project_id: string;
  scopes: GrantedScope[];
  /** ISO timestamp or null: keys without an expiry date live until revoked. */
  expires_at_iso: string | null;
  state: 'active' | 'revoked';
  /** Streams the key may hold open at once (`keys create --max-open-streams`); absent on keys made before, which have the default. */
  max_open_streams?: number;
  prefix: string;
  created_at: string;
  current_key_hash: string;
  /** The hash the latest rotation replaced, while it is in its grace period. */
  previous_key_hash?: string;
  /**
   * Every value rotated away whose grace period may not have ended, each with its own end (epoch ms): a second
   * rotation within 24 hours leaves the first old value its day, and a revocation deletes them all.
   */
  retired_key_hashes?: RetiredKeyHash[];
  /** ISO timestamp: when the replaced value stops working. */
  previous_valid_until_iso?: string;
  /** The same, as stored before time fields named their unit; read, never written. */
  previous_valid_until?: string;
}

export interface RetiredKeyHash {
  hash: string;
  valid_until_ms: number;
}

/** What one authentication reads (`key#<sha256>`): everything needed to decide, in one item. */
export interface KeyHashItem {
  key_id: string;
  project_id: string;
  scopes: GrantedScope[];
  /** Epoch ms of the key's expiry date, if it has one. */
  key_expires_at_ms?: number;
  /** Epoch ms after which a rotated-away value stops working. */
  valid_until_ms?: number;
  /** The record's `max_open_streams`, so that a stream knows its key's limit from the one read. */
  max_open_streams?: number;
}

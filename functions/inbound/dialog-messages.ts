import { isWellFormed } from '#shared/http/well-formed.ts';
import { MAX_INT32, MAX_MESSAGES_PER_DIALOG } from '#shared/limits.ts';
import { isIsoWithOffset } from './iso-timestamp.ts';

/** A messages[] element as the event schema outputs it: its own fields only, unknown ones dropped. */
export interface DialogMessage {
  text: string;
  timestamp: string;
  author_name: string;
  author_role: string;
  sequence_number?: number;
  external_id?: string;
  author_id?: string;
}

/**
 * The messages of a dialog when every one of them passes the event schema, built as the schema builds them; undefined
 * otherwise. zod walking 2000 messages was most of a dialog's validation; this loop decides the common case, valid
 * messages, and leaves every refusal (and anything unusual, such as a key present with the value undefined) to the
 * schema itself, so the issues and their wording stay the schema's. It must therefore never accept what the schema
 * refuses; test/unit/dialog-messages pins it against the schema.
 */
export function acceptedMessages(value: unknown): DialogMessage[] | undefined {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_MESSAGES_PER_DIALOG) return undefined;
  const messages: DialogMessage[] = new Array<DialogMessage>(value.length);
  for (let i = 0; i < value.length; i += 1) {
    const message = acceptedMessage(value[i]);
    if (!message) return undefined;
    messages[i] = message;
  }
  return messages;
}

function acceptedMessage(value: unknown): DialogMessage | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { text, timestamp, author_name, author_role, sequence_number, external_id, author_id } = value as Record<string, unknown>;
  if (!isText(text) || typeof timestamp !== 'string' || !isText(author_name) || !isText(author_role)) return undefined;
  if (!isIsoWithOffset(timestamp)) return undefined;
  const message: DialogMessage = { text, timestamp, author_name, author_role };
  // The optional fields in the schema's order, so the output's keys come in the same order as the schema's.
  if (sequence_number !== undefined) {
    if (!isInt32(sequence_number)) return undefined;
    message.sequence_number = sequence_number;
  } else if ('sequence_number' in value) return undefined;
  if (external_id !== undefined) {
    if (!isText(external_id)) return undefined;
    message.external_id = external_id;
  } else if ('external_id' in value) return undefined;
  if (author_id !== undefined) {
    if (!isText(author_id)) return undefined;
    message.author_id = author_id;
  } else if ('author_id' in value) return undefined;
  return message;
}

/** A string as the schema's callerText takes it (shared/caller-text.ts): well-formed Unicode. */
function isText(value: unknown): value is string {
  return typeof value === 'string' && isWellFormed(value);
}

function isInt32(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_INT32;
}

import { EXECUTION_VALUE_INLINE_MAX_BYTES } from '#shared/limits.ts';

/**
 * Values of an execution (context, node outputs, output, error, approval message, long history turns) as stored:
 * JSON text inside the DynamoDB item up to EXECUTION_VALUE_INLINE_MAX_BYTES, else an object in the bodies bucket
 * under `executions/<execution_id>/` with its key in the item. JSON text rather than a DynamoDB map, so any
 * value a caller can send is stored as it is (keys like `constructor`, numbers past 38 digits, deep nesting).
 */
const EXECUTIONS_PREFIX = 'executions/';

export const executionObjectKey = (executionId: string, name: string) => `${EXECUTIONS_PREFIX}${executionId}/${name}.json`;

/** The stored form: exactly one of `json` (inline) or `s3` (object key). */
export interface StoredValue {
  json?: string;
  s3?: string;
}

export interface ExecutionValues {
  /** Stores `value` inline or, when large, as the object `key` (written before the item that points to it). */
  store(value: unknown, key: string): Promise<StoredValue>;
  load(stored: StoredValue): Promise<unknown>;
}

/** Where large values go: the S3 implementation is in execution-values-s3.ts, so functions without the bucket bundle no S3 code. */
export interface ObjectStore {
  put(key: string, json: string): Promise<void>;
  get(key: string): Promise<string>;
}

export function createExecutionValues(objects: ObjectStore | undefined): ExecutionValues {
  const required = (): ObjectStore => {
    // Only functions granted the executions/ prefix can meet a large value; the others fail loudly, never silently.
    if (!objects) throw new Error('This function has no access to the bodies bucket for large execution values');
    return objects;
  };
  return {
    async store(value, key) {
      const json = JSON.stringify(value ?? null);
      if (Buffer.byteLength(json, 'utf8') <= EXECUTION_VALUE_INLINE_MAX_BYTES) return { json };
      await required().put(key, json);
      return { s3: key };
    },
    async load(stored) {
      if (stored.s3 === undefined) return JSON.parse(stored.json ?? 'null') as unknown;
      return JSON.parse(await required().get(stored.s3)) as unknown;
    },
  };
}

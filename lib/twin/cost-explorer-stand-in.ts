import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { listenOnLoopback } from './listen.ts';
import { jsonProtocolServer } from './json-protocol-server.ts';
import { loadJsonRecord } from './json-file.ts';

/**
 * The user-defined tag keys the CDK stack puts on every taggable resource (lib/cdk/stack.ts: `Project`, the one the
 * budget filters on, `CostCenter` and `Component`), which the twin may not import: a test synthesizes the stack and
 * holds this list to the keys its resources carry. Cost Explorer lists them once a deployed resource carries them.
 */
export const STACK_TAG_KEYS: readonly string[] = ['Project', 'CostCenter', 'Component'];

type TagStatus = 'Active' | 'Inactive';
type TagType = 'AWSGenerated' | 'UserDefined';

/** What an activation or deactivation changed, kept per key; a key never updated is `Inactive`, as AWS lists a new key. */
interface StoredTag {
  Status: TagStatus;
  LastUpdatedDate: string;
}

class CostExplorerError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/*
 * The constraints of the Cost Explorer service model (API version 2017-10-25, the model the SDK is generated from;
 * the SDK's own schema keeps only types, required members and enums). Nothing else is checked.
 */
const STATUSES: readonly TagStatus[] = ['Active', 'Inactive'];
const TYPES: readonly TagType[] = ['AWSGenerated', 'UserDefined'];
/** CostAllocationTagsMaxResults. */
const MAX_RESULTS = { min: 1, max: 1000 };
/** CostAllocationTagKeyList (ListCostAllocationTags' TagKeys). */
const TAG_KEYS_PER_FILTER = { min: 1, max: 100 };
/** TagKey, in a filter or a status entry (pattern `[\S\s]*`: any characters). */
const TAG_KEY_LENGTH = { min: 0, max: 1024 };
/** NextPageToken. */
const NEXT_TOKEN_LENGTH = { min: 0, max: 8192 };
/** CostAllocationTagStatusList: "in bulk, with maximum batch size of 20". */
const STATUS_ENTRIES = { min: 1, max: 20 };
/** CostAllocationTagList: a response holds at most 100 tags (ListCostAllocationTags' default page size too). */
const PAGE_SIZE = 100;

const TARGET_PREFIX = 'AWSInsightsIndexService.';
const JSON_CONTENT_TYPE = 'application/x-amz-json-1.1';

type Input = Record<string, unknown>;

/** How a Coral service words a value in a validation message. */
const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/**
 * Collects the request's constraint violations and answers them all at once, as AWS does ("2 validation errors
 * detected: ...; ..."). A member of the wrong JSON type is no violation but a body the service cannot read.
 */
class Violations {
  private readonly found: string[] = [];

  private add(value: unknown, at: string, constraint: string): void {
    this.found.push(
      `Value ${value === undefined ? 'null' : `'${shown(value)}'`} at '${at}' failed to satisfy constraint: Member must ${constraint}`,
    );
  }

  required(value: unknown, at: string): boolean {
    if (value !== undefined) return true;
    this.add(undefined, at, 'not be null');
    return false;
  }

  enumValue(value: string | undefined, at: string, allowed: readonly string[]): void {
    if (value !== undefined && !allowed.includes(value)) this.add(value, at, `satisfy enum value set: [${allowed.join(', ')}]`);
  }

  range(value: number | undefined, at: string, { min, max }: { min: number; max: number }): void {
    if (value === undefined) return;
    if (value < min) this.add(value, at, `have value greater than or equal to ${min}`);
    else if (value > max) this.add(value, at, `have value less than or equal to ${max}`);
  }

  length(value: string | readonly unknown[] | undefined, at: string, { min, max }: { min: number; max: number }): void {
    if (value === undefined) return;
    if (value.length < min) this.add(value, at, `have length greater than or equal to ${min}`);
    else if (value.length > max) this.add(value, at, `have length less than or equal to ${max}`);
  }

  check(): void {
    const count = this.found.length;
    if (count > 0)
      throw new CostExplorerError(
        'ValidationException',
        `${count} validation error${count === 1 ? '' : 's'} detected: ${this.found.join('; ')}`,
      );
  }
}

/** A JSON null member is an absent one; any other type than the model's is a body the service cannot deserialize. */
function member<T>(input: Input, name: string, is: (value: unknown) => value is T, expected: string): T | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (!is(value)) throw new CostExplorerError('SerializationException', `${name}: expected ${expected}`);
  return value;
}
const isString = (value: unknown): value is string => typeof value === 'string';
const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);
const isArray = (value: unknown): value is unknown[] => Array.isArray(value);
const isObject = (value: unknown): value is Input => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The first day of the month of `ms` at midnight UTC: how Cost Explorer dates a tag's last use (a month). */
function monthOf(ms: number): string {
  const date = new Date(ms);
  return `${date.getUTCFullYear()}-${String(date.getUTCMonth() + 1).padStart(2, '0')}-01T00:00:00Z`;
}
const timestampOf = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export interface CostExplorerStandInOptions {
  dataDir: string;
  /** The user-defined tag keys the twin's deployed resources carry (STACK_TAG_KEYS). */
  tagKeys: readonly string[];
  /** The clock of the dates it answers (a key's last use is this month). */
  now?: () => number;
  port?: number;
}

/**
 * The twin's Cost Explorer, for the cost allocation tags of the payer account only: the AWS JSON 1.1 API the SDK
 * speaks (target prefix `AWSInsightsIndexService.`), answering ListCostAllocationTags and
 * UpdateCostAllocationTagsStatus. The keys are the stack's user-defined tags, listed `UserDefined` and `Inactive` as
 * AWS lists them after the first deploy (AWS takes up to 24 hours to list them; the twin lists them at once), used
 * this month. An activation or deactivation is kept in a file under the data directory (written atomically), so it
 * survives a restart; a key the twin's resources do not carry cannot be updated (an error entry, as AWS answers).
 * The IAM front door before it authorizes each action.
 */
export async function startCostExplorerStandIn(options: CostExplorerStandInOptions): Promise<{ endpoint: string; close(): Promise<void> }> {
  const now = options.now ?? Date.now;
  const dir = join(options.dataDir, 'cost-explorer');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'cost-allocation-tags.json');
  const stored = new Map<string, StoredTag>(Object.entries(loadJsonRecord<StoredTag>(file, 'every cost allocation tag inactive')));
  const save = () => {
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(Object.fromEntries(stored)));
    renameSync(temporary, file);
  };
  const known = [...new Set(options.tagKeys)].sort();
  const view = (key: string) => {
    const tag = stored.get(key);
    return {
      TagKey: key,
      Type: 'UserDefined' as TagType,
      Status: tag?.Status ?? 'Inactive',
      ...(tag ? { LastUpdatedDate: tag.LastUpdatedDate } : {}),
      LastUsedDate: monthOf(now()),
    };
  };

  const operations: Record<string, (input: Input) => unknown> = {
    ListCostAllocationTags(input) {
      const status = member(input, 'Status', isString, 'a string');
      const tagKeys = member(input, 'TagKeys', isArray, 'a list');
      const type = member(input, 'Type', isString, 'a string');
      const nextToken = member(input, 'NextToken', isString, 'a string');
      const maxResults = member(input, 'MaxResults', isInteger, 'an integer');
      if (tagKeys?.some((key) => !isString(key)))
        throw new CostExplorerError('SerializationException', 'TagKeys: expected a list of strings');
      const violations = new Violations();
      violations.enumValue(status, 'status', STATUSES);
      violations.length(tagKeys, 'tagKeys', TAG_KEYS_PER_FILTER);
      (tagKeys as string[] | undefined)?.forEach((key, i) => violations.length(key, `tagKeys.${i + 1}.member`, TAG_KEY_LENGTH));
      violations.enumValue(type, 'type', TYPES);
      violations.length(nextToken, 'nextToken', NEXT_TOKEN_LENGTH);
      violations.range(maxResults, 'maxResults', MAX_RESULTS);
      violations.check();

      const matching = known
        .map(view)
        .filter((tag) => (!tagKeys || tagKeys.includes(tag.TagKey)) && (!type || tag.Type === type) && (!status || tag.Status === status));
      const start = nextToken ? offsetOf(nextToken) : 0;
      const page = matching.slice(start, start + Math.min(maxResults ?? PAGE_SIZE, PAGE_SIZE));
      const next = start + page.length < matching.length ? tokenOf(start + page.length) : undefined;
      return { CostAllocationTags: page, ...(next ? { NextToken: next } : {}) };
    },
    UpdateCostAllocationTagsStatus(input) {
      const entries = member(input, 'CostAllocationTagsStatus', isArray, 'a list');
      if (entries?.some((entry) => !isObject(entry)))
        throw new CostExplorerError('SerializationException', 'CostAllocationTagsStatus: expected a list of structures');
      const parsed = (entries as Input[] | undefined)?.map((entry) => ({
        TagKey: member(entry, 'TagKey', isString, 'a string'),
        Status: member(entry, 'Status', isString, 'a string'),
      }));
      const violations = new Violations();
      if (violations.required(parsed, 'costAllocationTagsStatus')) violations.length(parsed, 'costAllocationTagsStatus', STATUS_ENTRIES);
      parsed?.forEach((entry, i) => {
        const at = `costAllocationTagsStatus.${i + 1}.member`;
        if (violations.required(entry.TagKey, `${at}.tagKey`)) violations.length(entry.TagKey, `${at}.tagKey`, TAG_KEY_LENGTH);
        if (violations.required(entry.Status, `${at}.status`)) violations.enumValue(entry.Status, `${at}.status`, STATUSES);
      });
      violations.check();

      const errors: { TagKey: string; Code: string; Message: string }[] = [];
      let changed = false;
      for (const entry of parsed as { TagKey: string; Status: TagStatus }[]) {
        if (!known.includes(entry.TagKey)) {
          errors.push({
            TagKey: entry.TagKey,
            Code: 'TagKeysNotFoundException',
            Message: `Failed to update Cost Allocation Tag: ${entry.TagKey}`,
          });
          continue;
        }
        // "If the tag status that's updated is the same as the existing tag status, ... it doesn't have any effect."
        if (view(entry.TagKey).Status === entry.Status) continue;
        stored.set(entry.TagKey, { Status: entry.Status, LastUpdatedDate: timestampOf(now()) });
        changed = true;
      }
      if (changed) save();
      return { Errors: errors };
    },
  };

  const server = jsonProtocolServer({
    targetPrefix: TARGET_PREFIX,
    contentType: JSON_CONTENT_TYPE,
    operations,
    unknownOperation: (target) =>
      new CostExplorerError('UnknownOperationException', `The operation ${target} is not known to this endpoint.`),
    notJson: () => new CostExplorerError('SerializationException', 'The request body is not valid JSON.'),
    notObject: () => new CostExplorerError('SerializationException', 'Start of structure or map expected.'),
    refusal: (error) => {
      const failure =
        error instanceof CostExplorerError ? error : new CostExplorerError('InternalServerException', 'An internal error occurred');
      return {
        status: failure.type === 'InternalServerException' ? 500 : 400,
        headers: { 'x-amzn-errortype': failure.type },
        body: { __type: failure.type, message: failure.message },
      };
    },
  });
  return listenOnLoopback(server, options.port);
}

/** A page token: where the next page starts, opaque to the caller. A token the stand-in did not write is refused. */
const tokenOf = (offset: number) => Buffer.from(`cost-allocation-tags:${offset}`).toString('base64url');
function offsetOf(token: string): number {
  const match = /^cost-allocation-tags:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (!match)
    throw new CostExplorerError('InvalidNextTokenException', 'The pagination token is invalid. Try again without a pagination token.');
  return Number(match[1]);
}

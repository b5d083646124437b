import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_REGION } from './stores.ts';
import { parameterArnOf } from './local-arns.ts';
import { listenOnLoopback } from './listen.ts';
import { jsonProtocolServer } from './json-protocol-server.ts';
import { loadJsonRecord } from './json-file.ts';

interface StoredParameter {
  Name: string;
  Type: 'String' | 'SecureString';
  Value: string;
  Version: number;
  LastModifiedDate: number;
}

class SsmError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** Parameter Store's documented rules for the Standard tier, enforced as the service does. */
const MAX_NAME_CHARS = 1011;
const MAX_VALUE_BYTES = 4096;
const MAX_LEVELS = 15;
const NAME_PATTERN = /^[A-Za-z0-9_.\-/]+$/;
const MAX_GET_PARAMETERS = 10;
const MAX_RESULTS_PER_PATH_PAGE = 10;
const NAME_RULES =
  'Parameter name: can\'t be prefixed with "aws" or "ssm" (case-insensitive). It must use only letters, numbers, or the following ' +
  'symbols: . (period), - (hyphen), _ (underscore). Special characters are not allowed. All sub-paths, if specified, must use the ' +
  'forward slash symbol "/". Valid example: /get/parameters2-/by1./path0_.';

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0)
    throw new SsmError(
      'ValidationException',
      "1 validation error detected: Value at 'name' failed to satisfy constraint: Member must not be null",
    );
  if (name.length > MAX_NAME_CHARS)
    throw new SsmError('ValidationException', `Parameter name must be at most ${MAX_NAME_CHARS} characters`);
  if (!NAME_PATTERN.test(name)) throw new SsmError('ValidationException', NAME_RULES);
  if (name.includes('/') && !name.startsWith('/'))
    throw new SsmError('ValidationException', 'Parameter name must be a fully qualified name.');
  if (
    name.startsWith('/') &&
    name
      .slice(1)
      .split('/')
      .some((level) => level === '')
  )
    throw new SsmError('ValidationException', NAME_RULES);
  if (name.split('/').length - 1 > MAX_LEVELS)
    throw new SsmError('HierarchyLevelLimitExceededException', `A hierarchy can have a maximum of ${MAX_LEVELS} levels.`);
  return name;
}

/** Names under `aws` and `ssm` belong to AWS: they can be read (public parameters) but never created. */
function checkWritableName(name: string): string {
  if (/^\/?(aws|ssm)/i.test(name)) throw new SsmError('ValidationException', NAME_RULES);
  return name;
}

/**
 * The twin's SSM Parameter Store: the JSON 1.1 API the SDK speaks, for the operations the product uses (projects'
 * tool secrets): PutParameter, GetParameter, GetParameters, GetParametersByPath, DeleteParameter. Kept in one file
 * under the data directory (mode 0600, written atomically), so secrets survive a restart. A SecureString read
 * without decryption answers an opaque ciphertext, as AWS does. The IAM front door before it authorizes each name.
 */
export async function startSsmStandIn(options: { dataDir: string; port?: number }): Promise<{ endpoint: string; close(): Promise<void> }> {
  const dir = join(options.dataDir, 'ssm');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'parameters.json');
  const parameters = new Map<string, StoredParameter>(Object.entries(loadJsonRecord<StoredParameter>(file, 'no parameters')));
  const save = () => {
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(Object.fromEntries(parameters)), { mode: 0o600 });
    renameSync(temporary, file);
  };
  const view = (parameter: StoredParameter, decrypt: boolean) => ({
    Name: parameter.Name,
    Type: parameter.Type,
    Value: parameter.Type === 'SecureString' && !decrypt ? ciphertextOf(parameter) : parameter.Value,
    Version: parameter.Version,
    LastModifiedDate: parameter.LastModifiedDate,
    ARN: parameterArnOf(parameter.Name),
    DataType: 'text',
  });

  const operations: Record<string, (input: Record<string, unknown>) => unknown> = {
    PutParameter(input) {
      const name = checkWritableName(checkName(input.Name));
      const value = input.Value;
      if (typeof value !== 'string' || value.length === 0) throw new SsmError('ValidationException', 'Parameter value must not be empty');
      // AWS documents the limit as 4 KB; counting UTF-8 bytes keeps the twin from accepting a value AWS may refuse.
      if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES)
        throw new SsmError(
          'ValidationException',
          `Standard tier parameters support a maximum parameter value of ${MAX_VALUE_BYTES} characters.`,
        );
      const type = input.Type ?? parameters.get(name)?.Type;
      if (type !== 'String' && type !== 'SecureString')
        throw new SsmError('ValidationException', 'Type must be String or SecureString here (StringList is not used by the product)');
      const existing = parameters.get(name);
      if (existing && input.Overwrite !== true)
        throw new SsmError(
          'ParameterAlreadyExists',
          'The parameter already exists. To overwrite this value, set the overwrite option in the request to true.',
        );
      const version = (existing?.Version ?? 0) + 1;
      parameters.set(name, { Name: name, Type: type, Value: value, Version: version, LastModifiedDate: Date.now() / 1000 });
      save();
      return { Version: version, Tier: 'Standard' };
    },
    GetParameter(input) {
      const parameter = parameters.get(checkName(input.Name));
      if (!parameter) throw new SsmError('ParameterNotFound', `Parameter ${String(input.Name)} not found.`);
      return { Parameter: view(parameter, input.WithDecryption === true) };
    },
    GetParameters(input) {
      const names = input.Names;
      if (!Array.isArray(names) || names.length === 0 || names.length > MAX_GET_PARAMETERS) {
        throw new SsmError(
          'ValidationException',
          `1 validation error detected: Value at 'names' failed to satisfy constraint: Member must have length between 1 and ` +
            `${MAX_GET_PARAMETERS}`,
        );
      }
      const found = names.map((name) => parameters.get(checkName(name)));
      return {
        Parameters: found
          .filter((parameter): parameter is StoredParameter => parameter !== undefined)
          .map((parameter) => view(parameter, input.WithDecryption === true)),
        InvalidParameters: names.filter((_, i) => found[i] === undefined),
      };
    },
    GetParametersByPath(input) {
      const path = checkName(input.Path);
      if (!path.startsWith('/')) throw new SsmError('ValidationException', 'The parameter path must start with /');
      const base = path.endsWith('/') ? path : `${path}/`;
      const matching = [...parameters.values()]
        .filter(
          (parameter) => parameter.Name.startsWith(base) && (input.Recursive === true || !parameter.Name.slice(base.length).includes('/')),
        )
        .sort((a, b) => a.Name.localeCompare(b.Name));
      const start = typeof input.NextToken === 'string' ? Number(Buffer.from(input.NextToken, 'base64url').toString('utf8')) : 0;
      const page = matching.slice(start, start + MAX_RESULTS_PER_PATH_PAGE);
      const next = start + page.length < matching.length ? Buffer.from(String(start + page.length)).toString('base64url') : undefined;
      return { Parameters: page.map((parameter) => view(parameter, input.WithDecryption === true)), ...(next ? { NextToken: next } : {}) };
    },
    DeleteParameter(input) {
      const name = checkName(input.Name);
      if (!parameters.delete(name)) throw new SsmError('ParameterNotFound', `Parameter ${name} not found.`);
      save();
      return {};
    },
  };

  const server = jsonProtocolServer({
    targetPrefix: 'AmazonSSM.',
    contentType: 'application/x-amz-json-1.1',
    operations,
    unknownOperation: (target) => new SsmError('UnknownOperationException', `The operation ${target} is not known to this endpoint.`),
    notJson: () => new SsmError('SerializationException', 'Start of structure or map found where not expected.'),
    notObject: () => new SsmError('SerializationException', 'Start of structure or map found where not expected.'),
    refusal: (error) => {
      const known = error instanceof SsmError ? error : new SsmError('InternalServerError', 'An internal error occurred');
      return {
        status: known.type === 'InternalServerError' ? 500 : 400,
        headers: { 'x-amzn-errortype': known.type },
        body: { __type: known.type, message: known.message },
      };
    },
  });
  return listenOnLoopback(server, options.port);
}

/** Stands in for the KMS ciphertext AWS returns: opaque, stable per version, and never the value. */
function ciphertextOf(parameter: StoredParameter): string {
  return createHash('sha256').update(`${LOCAL_REGION}\n${parameter.Name}\n${parameter.Version}\n${parameter.Value}`).digest('base64');
}

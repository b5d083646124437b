import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * What the import rules of eslint.config.js (the layers of functions/ and lib/, and cycles) cannot say: file names,
 * what the pure test tiers load through other modules, and the names lib/admin takes from the DynamoDB packages.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FUNCTIONS = join(ROOT, 'functions');
const ALIASES = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).imports as Record<string, string>;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

function resolveImport(from: string, specifier: string): string {
  if (specifier.startsWith('.')) return normalize(join(dirname(from), specifier));
  for (const [pattern, target] of Object.entries(ALIASES)) {
    const prefix = pattern.replace('*', '');
    if (specifier.startsWith(prefix)) return join(ROOT, target.replace('*', specifier.slice(prefix.length)));
  }
  return specifier;
}

function importsOf(file: string, code = readFileSync(file, 'utf8')): string[] {
  const specifiers = [...code.matchAll(/(?:from\s*|import\s*\(\s*|import\s+)'([^']+)'/g)].map((match) => match[1]!);
  return specifiers
    .filter((specifier) => specifier.startsWith('.') || specifier.startsWith('#'))
    .map((specifier) => resolveImport(file, specifier));
}

/** "Handler" names only the entry points in `handlers/`, which eslint.config.js lets nothing import. */
describe('the names of functions/', () => {
  it('calls only entry points handlers: no module outside handlers/ is named *-handler.ts', () => {
    const isHandler = (file: string) => relative(FUNCTIONS, file).split('/')[1] === 'handlers';
    expect(
      sources(FUNCTIONS)
        .filter((file) => !isHandler(file) && /-handler\.ts$/.test(file))
        .map((file) => relative(ROOT, file)),
    ).toEqual([]);
  });
});

/**
 * The tiers a developer runs on save (`npm run test:unit`: test/unit and test/service) stay in memory: no store,
 * stand-in, twin, socket, child process or worker. Tests that need one live in test/local, test/handlers or test/e2e.
 */
describe('the pure test tiers', () => {
  const TESTS = join(ROOT, 'test');
  const SUPPORT = join(TESTS, 'support');
  /** Support modules that start servers or stores; fakes and plain helpers stay allowed. */
  const IMPURE_SUPPORT = [
    'local-twin.ts',
    'embedded-dynamo.ts',
    'mcp-server.ts',
    'https-recording-server.ts',
    'secret-echo.ts',
    'http.ts',
    'sse.ts',
  ];
  const IMPURE_PACKAGES = /^(node:)?(http|https|http2|net|tls|dgram|child_process|worker_threads|cluster)$|^(dynalite|s3rver)$/;
  /** What a file loads at run time: `import type` loads nothing. */
  const specifiersOf = (file: string) => {
    const code = readFileSync(file, 'utf8');
    const statements = [...code.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s*)?'([^']+)'/gm)].filter(
      (match) => !match[1],
    );
    const dynamic = [...code.matchAll(/import\s*\(\s*'([^']+)'/g)];
    return [...statements.map((match) => match[2]!), ...dynamic.map((match) => match[1]!)];
  };
  /** A twin module a pure test may use: one that itself loads no socket, process or other twin module (a pure helper). */
  const isPureTwinModule = (specifier: string) =>
    specifiersOf(resolveImport(FUNCTIONS, specifier)).every(
      (inner) => !IMPURE_PACKAGES.test(inner) && !inner.startsWith('#lib/twin/') && !inner.startsWith('.'),
    );
  const pureFiles = ['unit', 'service'].flatMap((tier) => sources(join(TESTS, tier)));

  it('reads the files it checks', () => {
    expect(pureFiles.length).toBeGreaterThan(20);
  });

  it('imports nothing that opens a store, a stand-in, the twin or a socket', () => {
    const impure = pureFiles.flatMap((file) =>
      specifiersOf(file)
        .filter((specifier) => {
          if (IMPURE_PACKAGES.test(specifier)) return true;
          if (specifier.startsWith('#lib/twin/')) return !isPureTwinModule(specifier);
          const resolved = specifier.startsWith('.') ? resolveImport(file, specifier) : '';
          return resolved.startsWith(SUPPORT) && IMPURE_SUPPORT.includes(relative(SUPPORT, resolved));
        })
        .map((specifier) => `${relative(ROOT, file)} -> ${specifier}`),
    );
    expect(impure).toEqual([]);
  });
});

/**
 * lib/admin reaches tables only through the repositories of functions/ (its README), which state each item's shape once.
 * What it may take for that: from the DynamoDB SDK packages (`@aws-sdk/client-dynamodb`, `lib-dynamodb`,
 * `util-dynamodb`) only the client classes target.ts builds the repositories' client with, `DynamoDBClient` and
 * `DynamoDBDocumentClient`; from `functions/shared/store/` only the stores that own their items, `counter-store.ts`
 * (the counters table) and `body-store.ts` (bodies in the bucket). A command, a command's input or output type, a
 * paginator, marshalling, and the helpers repositories page, batch and condition their writes with
 * (`paginate.ts`, ...) mean reading or writing items past their repository. Names must show: a default or namespace
 * import of a DynamoDB package, or a dynamic one not destructured at once (`const { X } = await import(...)`,
 * `(await import(...)).X`), counts as taking anything.
 */
describe('lib/admin and the tables', () => {
  const ADMIN = join(ROOT, 'lib', 'admin');
  const STORE = join(FUNCTIONS, 'shared', 'store');
  const DYNAMODB_PACKAGE = /^@aws-sdk\/(client-dynamodb|lib-dynamodb|util-dynamodb)$/;
  const CLIENT_CLASSES = new Set(['DynamoDBClient', 'DynamoDBDocumentClient']);
  const OWNING_STORES = new Set(['counter-store.ts', 'body-store.ts']);

  /** `A`, `type A`, `A as B`, `A: b` (destructuring) → `A`. */
  const namesIn = (list: string) =>
    list
      .split(',')
      .map(
        (part) =>
          part
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+|\s*:\s*/)[0]!,
      )
      .filter(Boolean);

  /** `<package> <name>` for each name the code takes from a DynamoDB package; `*` where it cannot tell which. */
  function dynamoNames(code: string): string[] {
    const taken: string[] = [];
    for (const [, clause, specifier] of code.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?([^;'"]*?)\s*from\s*'([^']+)'/gm)) {
      if (!DYNAMODB_PACKAGE.test(specifier!)) continue;
      const braced = /\{([^}]*)\}/.exec(clause!);
      const names = braced ? namesIn(braced[1]!) : [];
      if (
        clause!
          .replace(/\{[^}]*\}/, '')
          .replace(/,/g, '')
          .trim() !== ''
      )
        names.push('*');
      taken.push(...names.map((name) => `${specifier} ${name}`));
    }
    for (const found of code.matchAll(/import\s*\(\s*'([^']+)'\s*\)/g)) {
      const specifier = found[1]!;
      if (!DYNAMODB_PACKAGE.test(specifier)) continue;
      const before = code.slice(0, found.index);
      const after = code.slice(found.index + found[0].length);
      const destructured = /\{([^}]*)\}\s*=\s*await\s*$/.exec(before);
      const member = /\(\s*await\s*$/.test(before) ? /^\s*\)\s*\.\s*(\w+)/.exec(after) : null;
      const names = destructured ? namesIn(destructured[1]!) : member ? [member[1]!] : ['*'];
      taken.push(...names.map((name) => `${specifier} ${name}`));
    }
    return taken;
  }

  /** What a file of lib/admin takes past the repositories: DynamoDB names other than the clients, and store helpers. */
  function pastRepositories(file: string, code = readFileSync(file, 'utf8')): string[] {
    const names = dynamoNames(code).filter((taken) => !CLIENT_CLASSES.has(taken.split(' ')[1]!));
    const helpers = importsOf(file, code)
      .filter((to) => to.startsWith(`${STORE}/`) && !OWNING_STORES.has(relative(STORE, to)))
      .map((to) => relative(ROOT, to));
    return [...names, ...helpers].map((taken) => `${relative(ROOT, file)} -> ${taken}`);
  }

  const files = sources(ADMIN);

  it('reads the imports it checks', () => {
    const code = (name: string) => readFileSync(join(ADMIN, name), 'utf8');
    expect(dynamoNames(code('target.ts'))).toEqual([
      '@aws-sdk/client-dynamodb DynamoDBClient',
      '@aws-sdk/lib-dynamodb DynamoDBDocumentClient',
    ]);
    expect(importsOf(join(ADMIN, 'keys-commands.ts'))).toContain(join(STORE, 'counter-store.ts'));
  });

  it('finds each form of reaching a table past its repository', () => {
    const sample = [
      "import { allStoredItems } from '#shared/store/paginate.ts';",
      "import type { QueryCommandInput, ScanCommandInput } from '@aws-sdk/lib-dynamodb';",
      "import { DynamoDBDocumentClient, type GetCommand as Get } from '@aws-sdk/lib-dynamodb';",
      "import * as dynamodb from '@aws-sdk/client-dynamodb';",
      "const { ScanCommand, DynamoDBClient: Client } = await import('@aws-sdk/client-dynamodb');",
      "const put = new (await import('@aws-sdk/lib-dynamodb')).PutCommand({});",
      "const [sdk] = await Promise.all([import('@aws-sdk/util-dynamodb')]);",
    ].join('\n');
    expect(pastRepositories(join(ADMIN, 'sample.ts'), sample)).toEqual(
      [
        '@aws-sdk/lib-dynamodb QueryCommandInput',
        '@aws-sdk/lib-dynamodb ScanCommandInput',
        '@aws-sdk/lib-dynamodb GetCommand',
        '@aws-sdk/client-dynamodb *',
        '@aws-sdk/client-dynamodb ScanCommand',
        '@aws-sdk/lib-dynamodb PutCommand',
        '@aws-sdk/util-dynamodb *',
        'functions/shared/store/paginate.ts',
      ].map((taken) => `lib/admin/sample.ts -> ${taken}`),
    );
  });

  it('reads and writes items only through repositories', () => {
    expect(files.length).toBeGreaterThan(10);
    expect(files.flatMap((file) => pastRepositories(file))).toEqual([]);
  });
});

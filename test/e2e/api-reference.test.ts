import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFERENCE_PAGE_CSP } from '#shared/http/api-reference/api-reference.ts';
import { apiUrlFor, awsShapedUrlFor, stagePathFor } from '../support/api-urls.ts';
import { chromiumTestRuns, launchChromium } from '../support/chromium.ts';
import { documentedFetch } from '../support/fetch.ts';
import { http } from '../support/http.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * The reference pages each API serves beside its OpenAPI document: over HTTP (no key, the script they load, what it
 * costs), then in headless Chromium, from the AWS-shaped URL: nothing loaded from another host, every operation of the
 * served 3.1 document shown, and the execution stream's events with their fields.
 */

const APIS = [
  { name: 'published', basePath: '/api/v1/published' },
  { name: 'webhooks', basePath: '/api/v1/webhooks' },
] as const;

type Json = Record<string, any>;

// What the functions run in the page use of its globals: the project compiles without the DOM library.
declare const window: { cspViolations: string[] };
declare const document: {
  body: { innerText: string };
  addEventListener(type: 'securitypolicyviolation', listener: (event: { effectiveDirective: string; blockedURI: string }) => void): void;
};

let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

/**
 * A page at its AWS-shaped URL: under the REST API's stage (`/prod`), or at the webhook API's own root (an HTTP API's
 * `$default` stage has no path); `local`, without a stage.
 */
const pageUrl = (basePath: string, local = false) => (local ? apiUrlFor : awsShapedUrlFor)(twin, `${basePath}/docs`);

/** The URLs a page names, resolved against the page's own: the document Redoc loads and the script. */
function namedUrls(html: string, page: string) {
  return {
    document: new URL(/<redoc spec-url="([^"]+)"/.exec(html)![1]!, page).href,
    script: new URL(/<script src="([^"]+)"/.exec(html)![1]!, page).href,
  };
}

/** The bytes of a body as sent (a gzipped body still gzipped), and the headers. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Json; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.byteLength));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the API reference pages, over HTTP', () => {
  it.each(APIS)('serves the $name page without a key or token, at the local and the AWS-shaped URL', async ({ basePath }) => {
    for (const url of new Set([pageUrl(basePath, true), pageUrl(basePath)])) {
      const page = await http(url);

      expect(page.status, url).toBe(200);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.headers['content-security-policy']).toBe(REFERENCE_PAGE_CSP);
      expect(page.text).toContain('<redoc spec-url="openapi-3.1.json"');
      const document = await http(namedUrls(page.text, url).document);
      expect(document.status).toBe(200);
      expect(document.body.openapi).toBe('3.1.0');
    }
  });

  it.each(APIS)('serves the script the $name page names: gzipped to a browser, kept for a year', async ({ basePath }) => {
    const url = pageUrl(basePath);
    const { script } = namedUrls((await http(url)).text, url);

    const gzipped = await documentedFetch(script, { headers: { 'accept-encoding': 'gzip' } });
    const plain = await http(script);
    const sent = await rawGet(script, { 'accept-encoding': 'gzip, deflate, br' });

    expect(gzipped.status).toBe(200);
    expect(gzipped.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(gzipped.headers.get('content-encoding')).toBe('gzip');
    expect(gzipped.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const text = await gzipped.text();
    expect(text).toContain('const Yw="2.5.3"');
    expect(text).not.toContain('cdn.redoc.ly');
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.text).toBe(text);
    // What a browser's first view costs for the script: a third of the 1.1 MB bundle.
    expect(sent.bytes).toBeLessThan(400_000);
    expect(sent.bytes).toBeLessThan(Buffer.byteLength(text) / 3);
  });
});

/** One page view in a fresh browser context: every request it made, and what it refused or failed. */
interface PageView {
  page: Page;
  requested: string[];
  /** Requests to any origin but the twin's (data: and blob: URLs are made by the page, not sent anywhere). */
  foreign: string[];
  violations: string[];
  errors: string[];
  /** Bytes received for the view, headers included, as Chromium counts them. */
  bytes: () => number;
}

async function openView(context: BrowserContext, url: string, intercept: boolean): Promise<PageView> {
  const page = await context.newPage();
  const origin = new URL(url).origin;
  const view: PageView = { page, requested: [], foreign: [], violations: [], errors: [], bytes: () => received };
  let received = 0;
  const network = await page.createCDPSession();
  await network.send('Network.enable');
  network.on('Network.loadingFinished', (event) => (received += event.encodedDataLength));
  await page.evaluateOnNewDocument(() => {
    const seen: string[] = [];
    window.cspViolations = seen;
    document.addEventListener('securitypolicyviolation', (event) => seen.push(`${event.effectiveDirective} ${event.blockedURI}`));
  });
  page.on('pageerror', (error) => view.errors.push(String(error)));
  // Interception turns the browser's cache off: only a view that measures the cache goes without it.
  if (intercept) await page.setRequestInterception(true);
  page.on('request', (request) => {
    const target = new URL(request.url());
    view.requested.push(request.url());
    const local = target.origin === origin || target.protocol === 'data:' || target.protocol === 'blob:';
    if (!local) view.foreign.push(request.url());
    if (!intercept) return;
    void (local ? request.continue() : request.abort('blockedbyclient'));
  });
  await page.goto(url, { waitUntil: 'networkidle0' });
  await page.waitForSelector('[data-section-id*="operation/"]');
  view.violations.push(...(await page.evaluate(() => window.cspViolations)));
  return view;
}

/** The text of an operation's section as Redoc shows it. */
function operationText(page: Page, operationId: string): Promise<string> {
  return page.$$eval(
    `[data-section-id$="operation/${operationId}"]`,
    (sections) =>
      sections.map((section) => (section as unknown as { innerText: string }).innerText).sort((a, b) => b.length - a.length)[0] ?? '',
  );
}

function operationsOf(document: Json): { operationId: string; summary: string }[] {
  return Object.values<Json>(document.paths).flatMap((item) =>
    Object.values<Json>(item).map((operation) => ({ operationId: operation.operationId, summary: operation.summary })),
  );
}

const componentOf = (document: Json, ref: string): Json => document.components.schemas[ref.split('/').at(-1)!];

describe.skipIf(!chromiumTestRuns('test/e2e/api-reference.test.ts'))('the API reference pages, in Chromium', () => {
  let browser: Browser;
  let userDataDir: string;
  const views = new Map<string, PageView>();
  const documents = new Map<string, Json>();

  beforeAll(async () => {
    userDataDir = mkdtempSync(join(tmpdir(), 'api-reference-'));
    browser = await launchChromium(join(userDataDir, 'profile'));
    for (const { name, basePath } of APIS) {
      documents.set(name, (await http(awsShapedUrlFor(twin, `${basePath}/openapi-3.1.json`))).body as Json);
      views.set(name, await openView(await browser.createBrowserContext(), pageUrl(basePath), true));
    }
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  it.each(APIS)('renders the $name page from the API alone: the page, its script, its document, nothing refused', ({ name, basePath }) => {
    const view = views.get(name)!;
    const stage = stagePathFor(`${basePath}/docs`);

    expect(view.foreign).toEqual([]);
    expect(view.violations).toEqual([]);
    expect(view.errors).toEqual([]);
    const sent = view.requested.filter((url) => url.startsWith('http')).map((url) => new URL(url).pathname);
    expect(sent).toEqual(
      expect.arrayContaining([
        `${stage}${basePath}/docs`,
        `${stage}${basePath}/docs/redoc.standalone.js`,
        `${stage}${basePath}/openapi-3.1.json`,
      ]),
    );
    console.log(`${name} reference, first view: ${view.bytes()} bytes received over ${sent.length} requests`);
  });

  it.each(APIS)('shows every operation of the served $name document', async ({ name }) => {
    const { page } = views.get(name)!;
    const operations = operationsOf(documents.get(name)!);
    const text = await page.evaluate(() => document.body.innerText);

    expect(operations.length).toBeGreaterThanOrEqual(6);
    for (const { operationId, summary } of operations) {
      expect(await operationText(page, operationId), operationId).toContain(summary);
      expect(text, operationId).toContain(summary);
    }
  });

  it("shows the execution stream's events with the fields of their data, its 200 open", async () => {
    const document = documents.get('published')!;
    const { page } = views.get('published')!;
    const operation = document.paths['/executions/{execution_id}/stream'].get;
    // The 3.1 stream `schema`: its events' data, or the text, whose events are the union.
    const [, body] = operation.responses['200'].content['text/event-stream'].schema.anyOf as Json[];
    const union = componentOf(document, body!.contentSchema.items.$ref);
    const events = new Map<string, Json>(
      (union.oneOf as Json[]).map((member) => {
        const event = member.$ref ? componentOf(document, member.$ref) : member;
        return [event.properties.event.const as string, componentOf(document, event.properties.data.$ref)];
      }),
    );
    const text = await operationText(page, operation.operationId);

    // The events of an execution that completes; each one's data fields, as the document names them.
    for (const name of ['start', 'token', 'node_update', 'complete']) {
      expect(text, name).toContain(name);
      const fields = events.get(name)!.required as string[];
      expect(fields.length, name).toBeGreaterThan(0);
      for (const field of fields) expect(text, `${name}.${field}`).toContain(field);
    }
    expect(text).toContain('RESPONSE SCHEMA: text/event-stream');
  });

  it('lets the page reach no other origin, whatever runs in it', async () => {
    const { page } = views.get('published')!;

    const outcome = await page.evaluate(() =>
      fetch('https://example.com/x').then(
        () => 'loaded',
        () => 'refused',
      ),
    );
    const violations = await page.evaluate(() => window.cspViolations);

    expect(outcome).toBe('refused');
    expect(violations).toEqual(['connect-src https://example.com/x']);
  });

  it('loads the script once: a second view takes it from the cache, and the unchanged document costs only its head', async () => {
    const context = await browser.createBrowserContext();
    const url = pageUrl('/api/v1/published');
    const first = await openView(context, url, false);
    const second = await openView(context, url, false);
    // Bytes the script took off the network in each view: 0 when it came from the cache.
    const scriptTransfer = (view: PageView) =>
      view.page.evaluate(
        () =>
          (performance.getEntriesByType('resource') as unknown as { name: string; transferSize: number }[]).find((entry) =>
            entry.name.includes('redoc.standalone.js'),
          )?.transferSize,
      );

    expect(await scriptTransfer(first)).toBeGreaterThan(100_000);
    expect(await scriptTransfer(second)).toBe(0);
    expect(second.foreign).toEqual([]);
    expect(second.bytes()).toBeLessThan(first.bytes() / 3);
    // The document, unchanged, is revalidated by its ETag (304, no body): another view is the page (544 bytes) and two heads.
    expect(second.bytes()).toBeLessThan(4_000);
    console.log(`published reference: first view ${first.bytes()} bytes, another view ${second.bytes()} bytes`);
  });
});

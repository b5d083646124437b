import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT as ROOT, repositoryFiles } from '../support/repository-files.ts';

/**
 * The contract a reader can follow is in the repository: the OpenAPI documents generated from code and the READMEs
 * beside it. A comment, test name or README that cites a numbered part of some other document, or "the spec" as if
 * the reader had it, sends them nowhere; it should name the README (and its anchor) or state the rule itself.
 */
const FOLDERS = ['bin', 'lib', 'functions', 'statemachines', 'test'];
const FILES = ['README.md'];
const TEXT = /\.(?:[cm]?[jt]s|md|json|ya?ml)$/;

/** What sends a reader to a document the repository does not hold. */
const CITATIONS: readonly { what: string; pattern: RegExp }[] = [
  { what: 'a numbered section of a spec', pattern: /\bspecs?\b[^\n]{0,20}\bsections?\s+\d/i },
  { what: 'a numbered section', pattern: /\bsections?\s+\d+\b/i },
  { what: 'a section sign', pattern: /§\s*\d/ },
  { what: 'a numbered spec', pattern: /\bspecs?\s+\d/i },
  { what: "an API's spec", pattern: /\b(?:webhook|published|workflow)(?:\s+api)?\s+specs?\b/i },
  { what: 'the spec, as if the reader had it', pattern: /\b(?:the|both|its|team's|our)\s+specs?(?:'s?)?(?![-\w])/i },
];

/** A numbered section of a public document (an RFC, a web standard, a linked page) is one a reader can open. */
const PUBLIC_DOCUMENT = /\bRFC\s*\d|\b(?:ECMA|ISO|IETF|W3C|WHATWG)\b|https?:\/\//;

/** This file, whose examples below are the citations it looks for. */
const SELF = fileURLToPath(import.meta.url);

const citationsOf = (line: string) =>
  CITATIONS.filter(({ what, pattern }) => pattern.test(line) && !(what.includes('section') && PUBLIC_DOCUMENT.test(line)));

function citationsIn(file: string): string[] {
  return readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .flatMap((line, index) => {
      const found = citationsOf(line);
      return found.length ? [`${file}:${index + 1}: ${found.map(({ what }) => what).join(', ')}: ${line.trim()}`] : [];
    });
}

describe("the repository's citations", () => {
  it('name only what the repository holds: no section of an absent spec, no "the spec" a reader cannot open', () => {
    const paths = [...repositoryFiles(FOLDERS, TEXT).filter((file) => join(ROOT, file) !== SELF), ...FILES];
    expect(paths.length).toBeGreaterThan(100);
    expect(paths.flatMap(citationsIn)).toEqual([]);
  });

  it('catch the forms such a citation takes, and leave public documents and other senses of "spec" alone', () => {
    const cited = (line: string) => citationsOf(line).length > 0;
    for (const line of [
      '/** Webhook spec section 8: every request counts. */',
      '// see the spec, section 5',
      "describe('dialog normalization (webhook spec, section 2)'",
      ' * Inbound Conversation Webhook API, section 8, unless a comment says otherwise.',
      '## Nightly collection (webhook spec, section 1 items 4-8)',
      '/** Spec 8: the old key keeps working. */',
      '/** Published API spec: requests per key. */',
      'API keys belong on servers (§ 5)',
      "every gateway answer in both specs' error shape",
      "the choices made where the team's specs leave room",
      "refused in the spec's error shape",
      'give every refusal the error shape of its spec',
    ]) {
      expect(cited(line), line).toBe(true);
    }
    for (const line of [
      'Cache-Control: see RFC 9111, section 5.2',
      '<redoc spec-url="openapi-3.1.json">',
      "console.log(`Faults: ${faults.spec || 'every rate 0'}`)",
      'for (const spec of applicationInferenceProfiles(models, where)) {',
      'return { toolSpec: { name: tool.name } };',
      'A `whsec_`-prefixed secret is base64 per that spec (https://www.standardwebhooks.com)',
      "as the webhook API's OpenAPI document states",
      'sections.map((section) => section.innerText)',
    ]) {
      expect(cited(line), line).toBe(false);
    }
  });
});

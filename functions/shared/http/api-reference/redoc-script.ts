import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { prepareRedocScript, REDOC_STANDALONE_MODULE, redocScriptOf, type RedocScript } from './redoc-standalone.ts';

/**
 * The script the API reference pages load, prepared from the installed package at cold start (the twin, the tests).
 * A Lambda bundle has no node_modules: lib/cdk/bundling/bundle.ts prepares the file at bundling, writes it beside
 * index.mjs, and bundles lib/cdk/bundling/redoc-script-beside.ts in place of this module, which it finds by the import
 * path: import it as `#shared/http/api-reference/redoc-script.ts`, never by a relative path.
 */
export const redocScript: RedocScript = redocScriptOf(
  prepareRedocScript(readFileSync(createRequire(import.meta.url).resolve(REDOC_STANDALONE_MODULE))),
);

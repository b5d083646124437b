import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/*
 * Redoc's standalone bundle (one script: React, the renderer, its search worker), which the API reference pages load
 * from the API itself. What is served is prepared once from the installed file: the one address Redoc 2.x loads from
 * another host (the Redocly logo in its side menu) is taken out, and the script is gzipped, as nearly every browser
 * takes it (a third of the bytes).
 */

/** The installed bundle, resolved from the package. */
export const REDOC_STANDALONE_MODULE = 'redoc/bundles/redoc.standalone.js';

/** The prepared script's file beside a Lambda bundle's index.mjs (lib/cdk/bundling/bundle.ts writes it there). */
export const REDOC_SCRIPT_FILE = 'redoc.standalone.js.gz';

/**
 * The side menu's logo, an <img> of Redocly's CDN that no option turns off. An empty data: URL fails to load without
 * a request, and Redoc then drops the image (its onError), leaving the link's text.
 */
const EXTERNAL_LOGO = '"https://cdn.redoc.ly/redoc/logo-mini.svg"';
const NO_LOGO = '"data:,"';

export interface RedocScript {
  /** The script as served to clients that accept gzip. */
  readonly gzip: Buffer;
  /** Names this script in its URL (`?v=`), so a browser may keep it for good: another script is another URL. */
  readonly version: string;
}

/** The installed bundle as the pages serve it, gzipped. Throws when the bundle no longer has what is taken out. */
export function prepareRedocScript(standalone: Buffer): Buffer {
  const source = standalone.toString('utf8');
  const logos = source.split(EXTERNAL_LOGO).length - 1;
  if (logos !== 1)
    throw new Error(`Redoc's standalone bundle names its CDN logo ${logos} times, expected once: check what this Redoc version loads`);
  return gzipSync(Buffer.from(source.replace(EXTERNAL_LOGO, NO_LOGO), 'utf8'), { level: 9 });
}

export function redocScriptOf(gzip: Buffer): RedocScript {
  return { gzip, version: createHash('sha256').update(gzip).digest('hex').slice(0, 16) };
}

/**
 * What `import { z } from 'zod'` means inside a Lambda bundle (esbuild `--alias:zod=` this file, see
 * handler-function.ts): zod 4's classic API, as `zod/v4/classic/external.js` exports it, minus the `locales`
 * namespace (every language's messages, about 290 KB minified), the `core` namespace (which re-exports those
 * locales) and the JSON Schema converters and compiler, none of which the functions use.
 *
 * Why a file of its own: `z` is a namespace object, and esbuild keeps every export of a namespace that is
 * re-exported by name, so the locales cannot be tree-shaken from `import { z } from 'zod'`. English stays the
 * default: `schemas.js` registers it on the first schema it builds. The local twin and the tests use zod
 * itself; `test/infra/bundles.test.ts` checks that both give the same messages.
 */
import * as z from './zod-classic.ts';

export { z, z as default };
export * from './zod-classic.ts';

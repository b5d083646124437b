import { config } from 'zod/mini';
import { en } from 'zod/locales';

/**
 * zod for the functions: `zod/mini`, whose functions a bundle keeps only when called (about 20 KB, where
 * classic zod's methods keep all of it, 130 KB), with classic zod's English messages: mini loads no locale,
 * and would answer every issue "Invalid input". Every schema module imports this one, never 'zod' itself.
 *
 * Import it as `import * as z from '…/shared/zod.ts'` and only read members off `z` (`z.string()`): a `z`
 * used as a value keeps the whole namespace in the bundle, every locale included.
 */
config(en());

export * from 'zod/mini';

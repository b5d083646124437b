import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REDOC_SCRIPT_FILE, redocScriptOf, type RedocScript } from '#shared/http/api-reference/redoc-standalone.ts';

/**
 * What `functions/shared/http/api-reference/redoc-script.ts` means inside a Lambda bundle (bundle.ts): the script
 * prepared at bundling, read from beside index.mjs in the function's code directory, which Lambda names in
 * LAMBDA_TASK_ROOT. Read at cold start: a function without it fails there, not on a reader's first page.
 */
const root = process.env.LAMBDA_TASK_ROOT;
if (!root) throw new Error("LAMBDA_TASK_ROOT is not set: the reference script is read from the function's code directory");

export const redocScript: RedocScript = redocScriptOf(readFileSync(join(root, REDOC_SCRIPT_FILE)));

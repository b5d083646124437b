import { renderText } from '#workflows/template.ts';
import type { NodeExecutor } from './node-context.ts';

/** The execution fails with the rendered error. */
export const executeFail: NodeExecutor<'fail'> = async ({ node, scope }) => ({
  end: { status: 'failed', error: renderText(node.error, scope) },
});

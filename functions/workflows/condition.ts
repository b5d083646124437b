import type jsonataType from 'jsonata';
import { boundedCache } from '#shared/bounded-cache.ts';
import { CACHED_CONDITIONS } from '#shared/limits.ts';
import type { TemplateScope } from './template.ts';

/** Compiled once per expression; expressions come from every workflow published, so the cache is bounded. */
const compiled = boundedCache<string, ReturnType<typeof jsonataType>>({ maxEntries: CACHED_CONDITIONS });
/** Loaded on the first condition a step evaluates: most runs never meet one, and JSONata is ~80 KB to parse. */
let jsonata: Promise<typeof jsonataType> | undefined;
const loadJsonata = () => (jsonata ??= import('jsonata').then((module) => module.default));

/**
 * Evaluates a `condition` case: a JSONata expression (the language Step Functions itself uses) over
 * `{input, memory, nodes}`. JSONata's truthiness decides; an expression that errors at run time fails the execution.
 */
export async function conditionHolds(expression: string, scope: TemplateScope): Promise<boolean> {
  let program = compiled.get(expression);
  if (!program) {
    program = (await loadJsonata())(expression);
    compiled.set(expression, program);
  }
  const result: unknown = await program.evaluate({ input: scope.input, memory: scope.memory, nodes: scope.nodes });
  return truthy(result);
}

function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(truthy);
  if (typeof value === 'string') return value.length > 0;
  if (typeof value === 'number') return value !== 0 && !Number.isNaN(value);
  if (value !== null && typeof value === 'object') return Object.keys(value).length > 0;
  return Boolean(value);
}

import { StatesError } from './states-error.ts';

/**
 * The JSONPath the product's ASL uses: Reference Paths (`$`, `$.a.b`, `$['a']`, `$.list[0]`) and the context
 * object (`$$.Execution.Id`). Anything richer (filters, wildcards, intrinsic functions) is refused when the
 * definition loads, so the local runner never silently differs from Step Functions.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Segment = string | number;

const SEGMENT = /^(?:\.([^.[\]'$*?@()]+)|\['([^']*)'\]|\[(\d+)\])/;

export function parsePath(path: string): { context: boolean; segments: Segment[] } {
  const context = path.startsWith('$$');
  if (!path.startsWith('$')) throw new Error(`"${path}" is not a JSONPath (it must start with $)`);
  let rest = path.slice(context ? 2 : 1);
  const segments: Segment[] = [];
  while (rest.length > 0) {
    const match = SEGMENT.exec(rest);
    if (!match) throw new Error(`"${path}" is not a Reference Path the local runner supports`);
    segments.push(match[3] !== undefined ? Number(match[3]) : (match[1] ?? match[2])!);
    rest = rest.slice(match[0].length);
  }
  return { context, segments };
}

/** Reads a path; `undefined` when it names nothing (callers decide whether that is an error). */
export function readPath(path: string, data: Json, context: Json): Json | undefined {
  const parsed = parsePath(path);
  let value: Json | undefined = parsed.context ? context : data;
  for (const segment of parsed.segments) {
    if (value === null || typeof value !== 'object') return undefined;
    if (typeof segment === 'number') {
      if (!Array.isArray(value)) return undefined;
      value = value[segment];
    } else {
      if (Array.isArray(value) || !Object.hasOwn(value, segment)) return undefined;
      value = (value as Record<string, Json>)[segment];
    }
  }
  return value;
}

/** InputPath / OutputPath: null gives `{}`, a missing path is a runtime error as on AWS. */
export function selectPath(path: string | null | undefined, data: Json, context: Json, field: string): Json {
  if (path === null) return {};
  if (path === undefined || path === '$') return data;
  const value = readPath(path, data, context);
  if (value === undefined) throw new StatesError('States.Runtime', `Invalid path '${path}' in ${field}: it does not exist in the input`);
  return value;
}

/** ResultPath: where the result goes inside the state's raw input (`null` keeps the input, `$` replaces it). */
export function writeResultPath(input: Json, path: string | null | undefined, result: Json): Json {
  if (path === null) return input;
  if (path === undefined || path === '$') return result;
  const { segments } = parsePath(path);
  const root = structuredClone(input);
  if (root === null || typeof root !== 'object' || Array.isArray(root)) {
    throw new StatesError('States.ResultPathMatchFailure', `Unable to apply ResultPath ${path} to an input that is not an object`);
  }
  let target: Record<string, Json> = root;
  segments.forEach((segment, index) => {
    if (typeof segment === 'number') throw new StatesError('States.ResultPathMatchFailure', `ResultPath ${path} indexes an array`);
    if (index === segments.length - 1) {
      target[segment] = result;
      return;
    }
    const next = target[segment];
    if (next === undefined) target[segment] = {};
    else if (next === null || typeof next !== 'object' || Array.isArray(next)) {
      throw new StatesError('States.ResultPathMatchFailure', `ResultPath ${path} runs through a value that is not an object`);
    }
    target = target[segment] as Record<string, Json>;
  });
  return root;
}

/** Parameters / ResultSelector: keys ending in `.$` take the value at their path. */
export function applyTemplate(template: Json, data: Json, context: Json): Json {
  if (Array.isArray(template)) return template.map((item) => applyTemplate(item, data, context));
  if (template === null || typeof template !== 'object') return template;
  const result: Record<string, Json> = {};
  for (const [key, value] of Object.entries(template)) {
    if (!key.endsWith('.$')) {
      result[key] = applyTemplate(value, data, context);
      continue;
    }
    const path = value as string;
    const found = readPath(path, data, context);
    if (found === undefined) {
      throw new StatesError('States.Runtime', `The JSONPath '${path}' specified for the field '${key}' could not be found in the input`);
    }
    result[key.slice(0, -2)] = found;
  }
  return result;
}

/** Every path inside a template, for checking a definition when it loads. */
export function templatePaths(template: Json): string[] {
  if (Array.isArray(template)) return template.flatMap(templatePaths);
  if (template === null || typeof template !== 'object') return [];
  return Object.entries(template).flatMap(([key, value]) =>
    key.endsWith('.$') ? [typeof value === 'string' ? value : '<not a string>'] : templatePaths(value),
  );
}

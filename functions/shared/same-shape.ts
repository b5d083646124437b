/** True when `A` and `B` are assignable to each other: one shape, whichever side it is written on. */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/**
 * Compiles only when `Check` is true. Binds a value the code builds to the zod schema a document shows for it
 * (`sameShape<Same<ReturnType<typeof view>, z.output<typeof viewSchema>>>()`), so neither changes alone.
 */
export function sameShape<Check extends true>(): Check | undefined {
  return undefined;
}

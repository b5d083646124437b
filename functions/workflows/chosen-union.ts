import * as z from '#shared/zod.ts';

/**
 * One of several shapes, the one meant chosen from the value itself before it is parsed. zod's union tries every
 * shape, and when none parses and the meant one failed hard too (a missing field, an array over its limit, which
 * fails before its items are read), it reports only "Invalid input" on the whole value. Here the meant shape's own
 * issues are reported at their fields, and a value that is none of the shapes gets `expected`.
 */
export function chosenUnion<const Options extends readonly [z.ZodMiniType, ...z.ZodMiniType[]]>(
  options: Options,
  choose: (value: unknown) => Options[number] | undefined,
  expected: string,
) {
  const meant = z.unknown().check(
    z.superRefine((value, context) => {
      const option = choose(value);
      // Aborting, as the union's own issue does: the definition's rules across nodes never read a malformed part.
      if (!option) return void context.addIssue({ code: 'custom', message: expected, continue: false });
      for (const issue of option.safeParse(value).error?.issues ?? [])
        context.addIssue({ code: 'custom', path: issue.path, message: issue.message, continue: false });
    }),
  );
  // Parsed again by the union only once valid: the output keeps the union's type, defaults included.
  return z.pipe(meant, z.union(options));
}

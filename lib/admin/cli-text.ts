/** A command's answer that is text of its own (a CSV), printed as it is instead of as JSON. */
export class CliText {
  constructor(readonly text: string) {}
}

/**
 * A command's answer written piece by piece while the command's target is still open (`handoffs`), so an answer larger
 * than memory is never held whole: `write` waits until its piece has gone out.
 */
export class CliStream {
  constructor(readonly writeTo: (write: (piece: string) => Promise<void>) => Promise<void>) {}
}

/**
 * A command's answer that still ends the command with an exit code of its own, printed as any other answer (a table
 * or one JSON object): `verify` reports every check, and exits 1 when one failed.
 */
export class CliExit {
  constructor(
    readonly answer: object,
    readonly exitCode: number,
  ) {}
}

/** A command's answer that is text of its own (a CSV), printed as it is instead of as JSON. */
export class CliText {
  constructor(readonly text: string) {}
}

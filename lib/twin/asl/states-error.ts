/**
 * An error as Step Functions names it (`Error` and `Cause`). Terminal errors end the execution whatever the
 * state's Retry and Catch say about `States.ALL`: AWS documents exactly that for States.DataLimitExceeded and
 * States.Runtime, and the local runner must be no more forgiving.
 */
export class StatesError extends Error {
  constructor(
    name: string,
    readonly causeText: string,
  ) {
    super(causeText);
    this.name = name;
  }

  get terminal(): boolean {
    return this.name === 'States.DataLimitExceeded' || this.name === 'States.Runtime';
  }
}

/** Step Functions' payload quota: 256 KiB of UTF-8 for an execution's input, a state's input or output, a task's result. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;

export function payloadBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
}

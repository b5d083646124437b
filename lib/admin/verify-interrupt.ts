/** Exit codes of a command ended by a signal, as a shell reports them: 128 + the signal's number. */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
type InterruptSignal = keyof typeof SIGNAL_EXIT_CODES;

class Interrupted extends Error {
  override name = 'Interrupted';
  constructor(readonly signal: InterruptSignal) {
    super(`interrupted by ${signal}`);
  }
}

export interface Interrupt {
  /** Aborted, with an Interrupted as its reason, by the first SIGINT or SIGTERM. */
  signal: AbortSignal;
  /** The signal that arrived, if one did. */
  interrupted(): InterruptSignal | undefined;
  /** Gives SIGINT and SIGTERM back to Node's defaults. */
  stop(): void;
}

/**
 * SIGINT and SIGTERM as an interrupt of `admin verify`, from the moment this is called until `stop`: the first aborts
 * `signal` (the checks stop, the cleanup runs, the report is printed); a second one while the cleanup runs ends the
 * process at once, as an impatient operator expects.
 */
export function listenForInterrupts(): Interrupt {
  const controller = new AbortController();
  const listeners = (Object.keys(SIGNAL_EXIT_CODES) as InterruptSignal[]).map((signal) => {
    const listener = () => {
      if (controller.signal.aborted) process.exit(SIGNAL_EXIT_CODES[signal]);
      controller.abort(new Interrupted(signal));
    };
    process.on(signal, listener);
    return [signal, listener] as const;
  });
  return {
    signal: controller.signal,
    interrupted: () => (controller.signal.reason instanceof Interrupted ? controller.signal.reason.signal : undefined),
    stop: () => {
      for (const [signal, listener] of listeners) process.off(signal, listener);
    },
  };
}

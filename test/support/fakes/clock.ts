/** A clock the test moves by hand: `now` for deps, `sleep` advances it at once instead of waiting. */
export class ManualClock {
  readonly sleeps: number[] = [];

  constructor(private epochMs: number = Date.parse('2025-03-10T12:00:00.000Z')) {}

  readonly now = (): number => this.epochMs;

  readonly sleep = async (ms: number): Promise<void> => {
    this.sleeps.push(ms);
    this.epochMs += ms;
  };

  advance(ms: number): void {
    this.epochMs += ms;
  }

  set(epochMs: number): void {
    this.epochMs = epochMs;
  }

  iso(): string {
    return new Date(this.epochMs).toISOString();
  }
}

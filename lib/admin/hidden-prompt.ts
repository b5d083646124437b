import type { Writable } from 'node:stream';
import { UsageError } from './usage-error.ts';

/** A terminal's input as Node gives it (`process.stdin` when it is a TTY). */
export interface TerminalInput extends NodeJS.EventEmitter {
  setRawMode(raw: boolean): unknown;
  resume(): unknown;
  pause(): unknown;
}

/**
 * Asks on `output` and reads one line from a terminal without echoing it, so a secret typed at the prompt is in no
 * scrollback. Enter ends it; Backspace takes back one character; Ctrl-C and Ctrl-D on an empty line cancel.
 */
export function readHidden(input: TerminalInput, output: Writable, prompt: string): Promise<string> {
  // Echo goes off before the prompt shows: what is typed as soon as it appears must not reach the screen.
  input.setRawMode(true);
  output.write(prompt);
  input.resume();
  return new Promise((resolve, reject) => {
    let typed: string[] = [];
    const finish = (outcome: () => void) => {
      input.removeListener('data', onData);
      input.setRawMode(false);
      input.pause();
      output.write('\n');
      outcome();
    };
    function onData(chunk: Buffer | string) {
      for (const character of String(chunk)) {
        if (character === '\r' || character === '\n') return finish(() => resolve(typed.join('')));
        if (character === '\u0003' || (character === '\u0004' && typed.length === 0))
          return finish(() => reject(new UsageError('cancelled at the prompt; nothing was stored')));
        if (character === '\u007f' || character === '\b') typed = typed.slice(0, -1);
        else if (character >= ' ') typed.push(character);
      }
    }
    input.on('data', onData);
  });
}

import { describe, expect, it } from 'vitest';
import { withTerminalStatus } from '#lib/admin/cli.ts';

/** The status line `admin collect` keeps on stderr while it waits: rewritten in place at a terminal, absent in a pipe. */
function stderrLike(isTTY: boolean, columns = 40) {
  const written: string[] = [];
  const stream = { isTTY, columns, write: (text: string) => written.push(text) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, written };
}

describe('a long wait at the terminal', () => {
  it('rewrites one line in place, no wider than the terminal, and clears it before the answer', async () => {
    const { stream, written } = stderrLike(true, 20);
    const answer = await withTerminalStatus(stream, async (status) => {
      status!('collect: run manual-1 still running after 1 s: no batch finished yet');
      status!('collect: run manual-1 still running after 2 s: 3 handed off');
      return 'done';
    });
    expect(answer).toBe('done');
    expect(written).toEqual(['\r\x1b[Kcollect: run manual', '\r\x1b[Kcollect: run manual', '\r\x1b[K']);
  });

  it('clears the line when the wait fails, so the error starts clean', async () => {
    const { stream, written } = stderrLike(true);
    const failed = withTerminalStatus(stream, async (status) => {
      status!('still running');
      throw new Error('ended unfinished');
    });
    await expect(failed).rejects.toThrow('ended unfinished');
    expect(written).toEqual(['\r\x1b[Kstill running', '\r\x1b[K']);
  });

  it('gives a pipe no status at all, since scripts and tests read stderr', async () => {
    const { stream, written } = stderrLike(false);
    await withTerminalStatus(stream, async (status) => expect(status).toBeUndefined());
    expect(written).toEqual([]);
  });
});

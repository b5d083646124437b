import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readHidden } from '#lib/admin/hidden-prompt.ts';
import { UsageError } from '#lib/admin/usage-error.ts';
import { costReport, costReportCsv, costReportTable } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';

/** A terminal's stdin as Node gives it: raw mode switched by the reader, keystrokes as `data`. */
class FakeTerminal extends EventEmitter {
  readonly rawModes: boolean[] = [];
  setRawMode(raw: boolean) {
    this.rawModes.push(raw);
  }
  resume() {}
  pause() {}
}

function prompted(keys: string) {
  const terminal = new FakeTerminal();
  const output = new PassThrough();
  const answer = readHidden(terminal, output, 'Value of secret KEY: ');
  terminal.emit('data', Buffer.from(keys));
  return { answer, terminal, shown: () => String(output.read() ?? '') };
}

describe('the hidden prompt of secrets set', () => {
  it('reads a line in raw mode without echoing it, with Backspace taking a character back', async () => {
    const { answer, terminal, shown } = prompted('p"ss\\wx\u007f0rd\r');
    expect(await answer).toBe('p"ss\\w0rd');
    expect(terminal.rawModes).toEqual([true, false]);
    expect(shown()).toBe('Value of secret KEY: \n');
  });

  it('cancels on Ctrl-C and on Ctrl-D at an empty line, restoring the terminal', async () => {
    for (const keys of ['abc\u0003', '\u0004']) {
      const { answer, terminal } = prompted(keys);
      await expect(answer).rejects.toBeInstanceOf(UsageError);
      expect(terminal.rawModes).toEqual([true, false]);
    }
  });
});

describe('the cost report on a terminal', () => {
  const report = costReport({
    from: '2026-11-01',
    to: '2026-11-26',
    sheet: loadPriceSheet(),
    usage: [
      { subject: 'link#lnk_a', day: '2026-11-02', units: { apiRequests: 1000, lambdaInvocations: 1000, webhookEvents: 1000 } },
      {
        subject: 'project#default',
        day: '2026-11-03',
        units: { apiRequests: 20, stateTransitions: 40, modelCalls: 2, inputTokens: 1005, outputTokens: 100 },
        models: { 'amazon.nova-pro-v1:0': { input_tokens: 1000, output_tokens: 100 }, 'acme.unknown-v1:0': { input_tokens: 5 } },
      },
    ],
    executionCosts: [
      { project: 'default', workflow_id: 'wf', units: { stateTransitions: 4 } },
      { project: 'default', workflow_id: 'wf', units: { stateTransitions: 8 } },
    ],
  });

  it('shows the rows of the CSV, aligned, with the most expensive subjects under them', () => {
    const table = costReportTable(report);
    const lines = table.split('\n');
    expect(lines[0]).toBe(`Cost 2026-11-01 to 2026-11-26 (UTC days), us-east-1 prices of ${loadPriceSheet().date}`);
    const csvRows = costReportCsv(report)
      .trim()
      .split('\r\n')
      .slice(1)
      .map((row) => row.split(','));
    // The unpriced models are said in words under the total (below), not as a row of the table.
    for (const [label, count, usd] of csvRows.filter(([label]) => label !== 'unpriced models')) {
      const line = lines.find((candidate) => candidate.startsWith(`${label} `) || candidate === label);
      expect(line, label).toBeDefined();
      expect(line!.trimEnd().endsWith(usd!), label).toBe(true);
      if (count) expect(line, label).toContain(` ${count} `);
    }
    expect(table).toContain(`  link#lnk_a`);
    // One row per model, its tokens by kind in its label (never added to its images as one count), its dollars in the
    // USD column, or "unpriced" where the sheet cannot price it.
    expect(lines.find((line) => line.startsWith('model amazon.nova-pro-v1:0 '))).toMatch(
      /^model amazon\.nova-pro-v1:0 \(1000 input \+ 100 output tokens\) +0\.00112000$/,
    );
    expect(lines.find((line) => line.startsWith('model acme.unknown-v1:0 '))).toMatch(
      /^model acme\.unknown-v1:0 \(5 input tokens\) +unpriced$/,
    );
    // The total leaves the unpriced model out, and the line under it says so.
    const total = lines.findIndex((line) => /^total +\d/.test(line));
    expect(lines[total]).toMatch(new RegExp(` ${report.total_usd.toFixed(8).replace('.', '\\.')}$`));
    expect(lines[total + 1]).toBe('total leaves out unpriced models: acme.unknown-v1:0');
    // Calls are a service of their own, not counted among the tokens.
    expect(lines.find((line) => line.startsWith('Bedrock calls '))).toMatch(/ 2 +0\.00000000$/);
    expect(lines.find((line) => line.startsWith('Bedrock tokens '))).toMatch(/ 1105 +0\.00112000$/);
    const usdColumn = lines.filter((line) => /\d\.\d{8}$/.test(line)).map((line) => line.length);
    expect(new Set(usdColumn).size).toBe(1);
  });
});

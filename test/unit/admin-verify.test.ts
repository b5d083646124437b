import { describe, expect, it } from 'vitest';
import { PROBE_HOLD_MS } from '#lib/admin/verify-check.ts';
import { verifyTable, type VerifyReport } from '#lib/admin/verify-command.ts';
import { refusalExplanation, usdText } from '#lib/admin/verify-models.ts';
import { judgeProbe, recommendedPadding, streamWritesOutcome, type ProbeArrival } from '#lib/admin/verify-stream-writes.ts';
import { idProblem } from '#lib/admin/verify-workflow.ts';

const NOW = Date.parse('2026-03-01T00:00:00Z');
const CLAUDE = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';

describe('admin verify: what a Bedrock refusal tells the operator to do', () => {
  const explain = (name: string, message: string, model = CLAUDE) => refusalExplanation(model, { name, message }, NOW);

  it('names the three Marketplace actions, and the wait while a subscription is processed, for the Marketplace denial', () => {
    const { status, detail } = explain(
      'AccessDeniedException',
      'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model.',
    );

    expect(status).toBe('fail');
    expect(detail).toMatch(
      new RegExp(
        `^${CLAUDE.replaceAll('.', '\\.')}: expected an answer through its inference profile; got AccessDeniedException: Model access is denied`,
      ),
    );
    expect(detail).toContain('aws-marketplace:Subscribe, aws-marketplace:Unsubscribe and aws-marketplace:ViewSubscriptions');
    expect(detail).toContain('retry in 2-15 minutes');
  });

  it("sends the operator to Anthropic's use-case form when the account has not submitted it", () => {
    const { status, detail } = explain(
      'ResourceNotFoundException',
      'Model use case details have not been submitted for this account. Fill out the Anthropic use case details form before using the model.',
    );

    expect(status).toBe('fail');
    expect(detail).toContain('aws bedrock put-use-case-for-model-access');
    expect(detail).toContain('retry after 15 minutes');
  });

  it("names the catalog's replacement for a model past its end of life, and for one Bedrock marks Legacy", () => {
    const ended = explain(
      'ResourceNotFoundException',
      'This model version has reached the end of its life. Please refer to the AWS documentation for more details.',
      'us.anthropic.claude-3-5-haiku-20241022-v1:0',
    );
    const legacy = explain(
      'ResourceNotFoundException',
      'Access denied. This Model is marked by provider as Legacy and you have not been actively using the model in the last 30 days.',
      'us.anthropic.claude-3-5-haiku-20241022-v1:0',
    );

    for (const { status, detail } of [ended, legacy]) {
      expect(status).toBe('fail');
      expect(detail).toContain('Legacy or past its end of life');
      expect(detail).toContain('move to us.anthropic.claude-haiku-4-5-20251001-v1:0');
    }
  });

  it('calls an on-demand refusal and a model the region does not serve a region/profile problem', () => {
    const onDemand = explain(
      'ValidationException',
      'Invocation of model ID anthropic.claude-haiku-4-5-20251001-v1:0 with on-demand throughput isn\u2019t supported. Retry your request with the ID or ARN of an inference profile that contains this model.',
    );
    const invalid = explain('ValidationException', 'The provided model identifier is invalid.');

    expect(onDemand.detail).toContain('region/profile problem');
    expect(onDemand.detail).toContain('cross-region inference profile');
    expect(invalid.detail).toContain('region/profile problem');
  });

  it('names the invoke permission when the caller may not call the model at all', () => {
    const { status, detail } = explain(
      'AccessDeniedException',
      'User: arn:aws:iam::123456789012:user/ops is not authorized to perform: bedrock:InvokeModelWithResponseStream on resource: arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc',
    );

    expect(status).toBe('fail');
    expect(detail).toContain('allow them bedrock:InvokeModelWithResponseStream on the profile');
  });

  it('only warns when the call was throttled: nothing is wrong with the deployment', () => {
    const { status, detail } = explain('ThrottlingException', 'Too many requests, please wait before trying again.');

    expect(status).toBe('warn');
    expect(detail).toContain('verify again later');
  });

  it('passes any other refusal on with its own name and message', () => {
    const { status, detail } = explain('ModelErrorException', 'The model failed to process the request.');

    expect(status).toBe('fail');
    expect(detail).toContain('got ModelErrorException: The model failed to process the request.');
  });

  it('writes a call that cost millionths of a dollar as a person reads it', () => {
    expect(usdText(0)).toBe('$0');
    expect(usdText(0.000000805)).toBe('$0.00000081');
    expect(usdText(0.0286)).toBe('$0.029');
    expect(usdText(1.5)).toBe('$1.5');
  });
});

describe('admin verify: whether a streamed write reached the client at once', () => {
  const arrival = (bytes: number, firstBytesAtMs: number, endAtMs: number): ProbeArrival => ({
    bytes,
    holdMs: PROBE_HOLD_MS,
    firstBytesAtMs,
    endAtMs,
  });

  it('counts a write whose bytes came a whole hold before the end as prompt, and one that came with the end as held', () => {
    expect(judgeProbe(arrival(1, 150, 2160))).toEqual({ bytes: 1, held_ms: 0, reached_at_once: true });
    expect(judgeProbe(arrival(1024, 2150, 2152))).toEqual({ bytes: 1024, held_ms: 1998, reached_at_once: false });
  });

  it('puts the line at a quarter of the hold: a gap of 1500 ms of 2000 is at once, 1499 ms is not', () => {
    expect(judgeProbe(arrival(16384, 500, 2000)).reached_at_once).toBe(true);
    expect(judgeProbe(arrival(16384, 501, 2000))).toEqual({ bytes: 16384, held_ms: 501, reached_at_once: false });
  });

  it('measures only the gap between two arrivals: when the request started does not matter', () => {
    expect(judgeProbe(arrival(1, 90_000, 92_000))).toEqual(judgeProbe(arrival(1, 10, 2010)));
  });

  it('recommends the smallest size that reached the client at once as the padding, and none when 1 B did', () => {
    const judged = (prompt: number[]) =>
      [1, 1024, 16384, 65536].map((bytes) => ({
        bytes,
        held_ms: prompt.includes(bytes) ? 0 : 1900,
        reached_at_once: prompt.includes(bytes),
      }));

    expect(recommendedPadding(judged([16384, 65536]))).toBe(16384);
    expect(recommendedPadding(judged([1, 1024, 16384, 65536]))).toBe(0);
    expect(recommendedPadding(judged([]))).toBeUndefined();
    expect(streamWritesOutcome(judged([16384, 65536]))).toMatchObject({ status: 'pass', recommendation: { padding_bytes: 16384 } });
    expect(streamWritesOutcome(judged([16384, 65536])).detail).toContain(
      '16 KB of filler will do: cdk deploy -c streamFlushPaddingBytes=16384',
    );
    expect(streamWritesOutcome(judged([1, 1024, 16384, 65536]))).toMatchObject({ status: 'pass', recommendation: { padding_bytes: 0 } });
    expect(streamWritesOutcome(judged([1, 1024, 16384, 65536])).detail).toContain(
      'the streams need no filler (-c streamFlushPaddingBytes=0, the default)',
    );
  });

  it('warns, with no recommendation, when every size up to 64 KB was held', () => {
    const outcome = streamWritesOutcome([1, 1024, 16384, 65536].map((bytes) => ({ bytes, held_ms: 1990, reached_at_once: false })));

    expect(outcome).toMatchObject({ status: 'warn', recommendation: null });
    expect(outcome.detail).toBe(
      '1 B held ~1990 ms, 1 KB held ~1990 ms, 16 KB held ~1990 ms, 64 KB held ~1990 ms: writes up to 64 KB are held on their way to the client; pad the streams past the largest hold reported: cdk deploy -c streamFlushPaddingBytes=102400',
    );
  });
});

describe('admin verify: a resumed stream gave every event once', () => {
  it('accepts ids 1 to n once each, and names a repeat or a gap', () => {
    expect(idProblem([1, 2, 3, 4])).toBeUndefined();
    expect(idProblem([1, 2, 2, 3])).toBe('event 2 twice (ids 1, 2, 2, 3)');
    expect(idProblem([1, 2, 4])).toBe('no event 3 (ids 1, 2, 4)');
  });
});

describe('admin verify: the table at a terminal', () => {
  const report: VerifyReport = {
    target: 'stack WorkflowIngestPlatform (eu-west-1)',
    passed: false,
    cleaned_up: [],
    checks: [
      { check: 'openapi', status: 'pass', detail: 'both documents served' },
      {
        check: 'models',
        status: 'fail',
        detail: '1 of 2 models answered\nmodel-a: expected an answer; got AccessDeniedException: no. -> do this\nmodel-b: answered',
      },
      {
        check: 'cost-tag',
        status: 'warn',
        detail: 'expected the Project tag to be Active; it is Inactive -> activate it with the one command that does',
      },
    ],
  };

  it('shows a row per check, each further line of a detail under the detail column, wrapped to the width, and the verdict', () => {
    expect(verifyTable(report, 60)).toBe(
      [
        'verify stack WorkflowIngestPlatform (eu-west-1)',
        '',
        'check     result  detail',
        'openapi   pass    both documents served',
        'models    FAIL    1 of 2 models answered',
        '                  model-a: expected an answer; got',
        '                  AccessDeniedException: no. -> do this',
        '                  model-b: answered',
        'cost-tag  warn    expected the Project tag to be Active; it',
        '                  is Inactive -> activate it with the one',
        '                  command that does',
        '',
        '1 check failed, 1 warning',
        '',
      ].join('\n'),
    );
  });

  it('lists what it cleaned up under the checks', () => {
    const table = verifyTable({ ...report, cleaned_up: ['webhook link lnk_1', 'key key_1 of project admin-verify-1'] }, 60);

    expect(table).toContain('\ncleaned up: webhook link lnk_1; key key_1 of project\nadmin-verify-1\n\n1 check failed, 1 warning\n');
  });

  it('says when the command passed with warnings, and when a signal stopped it', () => {
    const passed = verifyTable({ ...report, passed: true, checks: [report.checks[0]!, report.checks[2]!] });
    const interrupted = verifyTable({ ...report, interrupted: 'SIGINT' });

    expect(passed.trimEnd().split('\n').at(-1)).toBe('passed, 1 warning');
    expect(interrupted.trimEnd().split('\n').at(-1)).toBe(
      'interrupted by SIGINT: the checks stopped, and what they had created was removed',
    );
  });
});

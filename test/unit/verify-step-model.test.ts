import { describe, expect, it } from 'vitest';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';
import { stepModelProbes, stepRoleRefusal, type StepModelProbe } from '#lib/admin/verify-step-model.ts';

const NOW = Date.parse('2026-03-01T00:00:00Z');
const PROFILE = (id: string) => `arn:aws:bedrock:us-east-2:123456789012:application-inference-profile/${id}`;
const PROFILES = {
  'amazon.nova-lite-v1:0': PROFILE('lite00000000'),
  'amazon.nova-micro-v1:0': PROFILE('micro0000000'),
  'us.anthropic.claude-haiku-4-5-20251001-v1:0': PROFILE('haiku0000000'),
  'us.amazon.nova-micro-v1:0': PROFILE('usmicro00000'),
};
const CROSS: StepModelProbe = {
  model: 'us.amazon.nova-micro-v1:0',
  profileArn: PROFILES['us.amazon.nova-micro-v1:0'],
  copies: 'cross-region profile',
};
const DIRECT: StepModelProbe = {
  model: 'amazon.nova-micro-v1:0',
  profileArn: PROFILES['amazon.nova-micro-v1:0'],
  copies: 'foundation model',
};
const ROLE = 'Platform-WorkflowEngineWorkflowStepServiceRole-1A2B3C';
/** IAM's refusal as the state machine records the step's failure. */
const denied = (resource: string) =>
  `Execution error (AccessDeniedException): User: arn:aws:sts::123456789012:assumed-role/${ROLE}/Platform-WorkflowStep-9Z8Y is not ` +
  `authorized to perform: bedrock:InvokeModelWithResponseStream on resource: ${resource} because no identity-based policy allows the ` +
  'bedrock:InvokeModelWithResponseStream action';

describe('admin verify step-model: the models the step function is asked to call', () => {
  it('takes the cheapest model of each kind of profile source by the price sheet, the list order breaking ties', () => {
    const probes = stepModelProbes(PROFILES, loadPriceSheet('us-east-1'), NOW);

    expect(probes).toEqual([
      { model: 'amazon.nova-micro-v1:0', profileArn: PROFILES['amazon.nova-micro-v1:0'], copies: 'foundation model' },
      { model: 'us.amazon.nova-micro-v1:0', profileArn: PROFILES['us.amazon.nova-micro-v1:0'], copies: 'cross-region profile' },
    ]);
  });

  it('takes one probe when the list holds one kind, and the first of the list when no price sheet says which is cheaper', () => {
    const onlyDirect = {
      'amazon.nova-lite-v1:0': PROFILES['amazon.nova-lite-v1:0'],
      'amazon.nova-micro-v1:0': PROFILES['amazon.nova-micro-v1:0'],
    };

    expect(stepModelProbes(onlyDirect, undefined, NOW)).toEqual([
      { model: 'amazon.nova-lite-v1:0', profileArn: PROFILES['amazon.nova-lite-v1:0'], copies: 'foundation model' },
    ]);
  });
});

describe('admin verify step-model: what the step function’s refusal tells the operator', () => {
  it('names the refused resource, the profile the call named and the ARNs the role’s condition lists, and the copied profile', () => {
    const copied = 'arn:aws:bedrock:us-east-2:123456789012:inference-profile/us.amazon.nova-micro-v1:0';
    const { status, detail } = stepRoleRefusal(CROSS, denied(copied), PROFILES, NOW);

    expect(status).toBe('fail');
    expect(detail).toMatch(
      /^us\.amazon\.nova-micro-v1:0 \(its profile copies a cross-region profile\): expected the step function to get an answer through \S+usmicro00000; got Execution error \(AccessDeniedException\): User: /,
    );
    expect(detail).toContain(
      `-> the role ${ROLE} was refused bedrock:InvokeModelWithResponseStream on ${copied}, which the profile copies`,
    );
    expect(detail).toContain(`the deployment's 4 application profiles (${Object.values(PROFILES).join(', ')})`);
    expect(detail).toContain(`this call named ${CROSS.profileArn}`);
    expect(detail).toContain(`aws iam list-role-policies --role-name ${ROLE}, then aws iam get-role-policy`);
    expect(detail).toContain(`most likely the cross-region profile the application profile copies (${copied})`);
    expect(detail).toContain('-c bedrockModels=<ids without us./eu./apac./global.>');
  });

  it('does not blame the cross-region profile for a profile that copies a foundation model', () => {
    const model = 'arn:aws:bedrock:us-east-2::foundation-model/amazon.nova-micro-v1:0';
    const { detail } = stepRoleRefusal(DIRECT, denied(model), PROFILES, NOW);

    expect(detail).toContain(`was refused bedrock:InvokeModelWithResponseStream on ${model}, which the profile copies`);
    expect(detail).toContain('not the profile the call named, as AWS documents it: raise it with AWS Support');
    expect(detail).not.toContain('cross-region profile the application profile copies');
  });

  it('sends the operator to deploy when the role lacks the profile itself', () => {
    const { detail } = stepRoleRefusal(DIRECT, denied(DIRECT.profileArn), PROFILES, NOW);

    expect(detail).toContain(`-> the role ${ROLE} has no bedrock:InvokeModelWithResponseStream on the profile itself`);
    expect(detail).toMatch(/deploy this version \(npx cdk deploy\)$/);
  });

  it('names the Marketplace actions the stack grants, and the wait while a subscription is processed', () => {
    const { status, detail } = stepRoleRefusal(
      CROSS,
      'Execution error (AccessDeniedException): Model access is denied due to IAM user or service role is not authorized to perform the ' +
        'required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model.',
      PROFILES,
      NOW,
    );

    expect(status).toBe('fail');
    expect(detail).toContain('aws-marketplace:Subscribe, aws-marketplace:Unsubscribe and aws-marketplace:ViewSubscriptions');
    expect(detail).toContain('aws:CalledViaLast');
    expect(detail).toContain('retry in 2-15 minutes');
  });

  it("sends the operator to Anthropic's use-case form when the account has not submitted it", () => {
    const { status, detail } = stepRoleRefusal(
      CROSS,
      'Execution error (ResourceNotFoundException): Model use case details have not been submitted for this account. Fill out the ' +
        'Anthropic use case details form before using the model.',
      PROFILES,
      NOW,
    );

    expect(status).toBe('fail');
    expect(detail).toMatch(/^us\.amazon\.nova-micro-v1:0 \(its profile copies a cross-region profile\): expected the step function/);
    expect(detail).toContain("-> submit Anthropic's use-case form once for this account (aws bedrock put-use-case-for-model-access");
  });

  it('lists the three likely causes for an AccessDenied it cannot read', () => {
    const { detail } = stepRoleRefusal(CROSS, 'Execution error (AccessDeniedException): Access denied', PROFILES, NOW);

    expect(detail).toContain("the role's bedrock:InferenceProfileArn condition");
    expect(detail).toContain('the Marketplace actions');
    expect(detail).toContain("Anthropic's use-case form");
  });

  it('only warns for a throttle the state machine gave up on: nothing is wrong with the role', () => {
    const { status, detail } = stepRoleRefusal(
      CROSS,
      'Execution error (TransientServiceError): ThrottlingException: Too many requests, please wait before trying again.',
      PROFILES,
      NOW,
    );

    expect(status).toBe('warn');
    expect(detail).toContain('-> throttled: nothing is wrong with the deployment');
  });

  it('passes a failure that is no Bedrock error on with its own words', () => {
    const { status, detail } = stepRoleRefusal(CROSS, 'The workflow is no longer published', PROFILES, NOW);

    expect(status).toBe('fail');
    expect(detail).toMatch(/got The workflow is no longer published -> see the message/);
  });
});

import { CfnOutput, Stack } from 'aws-cdk-lib';
import { CfnApplicationInferenceProfile } from 'aws-cdk-lib/aws-bedrock';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { INFERENCE_PROFILES_ENV } from '#engine/inference-profiles.ts';
import {
  applicationInferenceProfiles,
  bedrockModelArns,
  INVOKE_ACTIONS,
  PROFILE_ACTIONS,
  throughProfilesCondition,
} from '#lib/cdk/bedrock-models.ts';
import { BEDROCK_PROFILES_OUTPUT } from '#lib/cdk/stack-outputs.ts';

/** Of Lambda's 4 KB for all of a function's environment variables, what the profile map may take. */
const ENVIRONMENT_BUDGET_BYTES = 2900;

export interface InferenceProfilesProps {
  /** The deployment's Bedrock allow-list (lib/cdk/bedrock-models.ts). */
  readonly models: readonly string[];
}

/**
 * One application inference profile per allowed Bedrock model (`AWS::Bedrock::ApplicationInferenceProfile`), each
 * carrying the stack's tags (`Project`, `CostCenter`, `Component`): on-demand model calls carry no cost allocation
 * tag, calls through a tagged profile are billed with its tags, so the budget on the `Project` tag sees the models.
 */
export class InferenceProfiles extends Construct {
  /** Model id → its profile, in the allow-list's order. */
  public readonly profiles = new Map<string, CfnApplicationInferenceProfile>();
  private readonly models: readonly string[];

  constructor(scope: Construct, id: string, props: InferenceProfilesProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.models = props.models;
    const where = { partition: stack.partition, region: stack.region, account: stack.account, deployment: stack.stackName };
    for (const spec of applicationInferenceProfiles(props.models, where)) {
      this.profiles.set(
        spec.model,
        new CfnApplicationInferenceProfile(this, spec.model, {
          inferenceProfileName: spec.name,
          description: spec.description,
          modelSource: { copyFrom: spec.copyFrom },
        }),
      );
    }
    // Lambda takes at most 4 KB of environment variables per function; the map leaves the rest to the others.
    const longestArn = 'arn:aws-us-gov:bedrock:ap-southeast-4:000000000000:application-inference-profile/'.length + 12;
    const estimate = props.models.reduce((sum, model) => sum + model.length + longestArn + 6, 2);
    if (estimate > ENVIRONMENT_BUDGET_BYTES) {
      throw new Error(
        `bedrockModels: ${props.models.length} models need about ${estimate} bytes of the step function's environment (at most ` +
          `${ENVIRONMENT_BUDGET_BYTES}); allow fewer`,
      );
    }
    // The same JSON the step function gets, for the operator: `admin verify` calls each model through its profile.
    new CfnOutput(this, BEDROCK_PROFILES_OUTPUT, { key: BEDROCK_PROFILES_OUTPUT, value: this.environmentValue() });
  }

  /** The profiles' ARNs by model id: the step function's `BEDROCK_INFERENCE_PROFILES` (one JSON value). */
  public environmentValue(): string {
    return Stack.of(this).toJsonString(
      Object.fromEntries([...this.profiles].map(([model, profile]) => [model, profile.attrInferenceProfileArn])),
    );
  }

  /**
   * Lets `fn` call the models through the profiles, and through nothing else of its own: InvokeModel (InvokeModel and
   * Converse) and InvokeModelWithResponseStream (ConverseStream) plus GetInferenceProfile on the profiles
   * (`PROFILE_ACTIONS`, which cites why), and the two invoke actions on what they copy, which Bedrock authorizes as
   * well: the foundation model in this region, or the cross-region profile and its model in every region it routes
   * to. That second grant holds only for a call that names one of these profiles (`throughProfilesCondition`, on
   * `bedrock:InferenceProfileArn`): a direct call to a model, which would carry no tag, is refused. There is no
   * separate `bedrock:Converse` action.
   */
  public grantInvoke(fn: LambdaFunction): void {
    const stack = Stack.of(this);
    const profileArns = [...this.profiles.values()].map((profile) => profile.attrInferenceProfileArn);
    fn.addEnvironment(INFERENCE_PROFILES_ENV, this.environmentValue());
    fn.addToRolePolicy(new PolicyStatement({ actions: [...PROFILE_ACTIONS], resources: profileArns }));
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: [...INVOKE_ACTIONS],
        resources: bedrockModelArns(this.models, { partition: stack.partition, region: stack.region, account: stack.account }),
        conditions: throughProfilesCondition(profileArns),
      }),
    );
  }
}

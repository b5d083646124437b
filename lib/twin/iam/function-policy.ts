import {
  OBJECT_ACTIONS,
  STATE_MACHINE_ACTIONS,
  TABLE_ACTIONS,
  type Access,
  type BucketPrefix,
  type ObjectAccess,
  type ResourceGrants,
  type StateMachineAccess,
  type StateMachineName,
  type TableName,
} from '#shared/resources.ts';
import { TABLE_DEFINITIONS } from '#lib/cdk/table-definitions.ts';
import {
  bedrockModelArns,
  defaultBedrockModels,
  INVOKE_ACTIONS,
  marketplaceGrants,
  PROFILE_ACTIONS,
  throughProfilesCondition,
} from '#lib/cdk/bedrock-models.ts';
import {
  LOCAL_ACCOUNT,
  LOCAL_SECRETS_PREFIX,
  localExecutionsArn,
  localStateMachineArn,
  localTableArn,
  objectArnOf,
  parameterArnOf,
} from '#lib/twin/local-arns.ts';
import { LOCAL_BUCKET, LOCAL_REGION } from '#lib/twin/stores.ts';

/** What a route or task entry declares; CDK turns the same fields into the function's role (lib/cdk/constructs). */
export interface FunctionDeclaration extends ResourceGrants {
  readonly id: string;
}

/** A policy condition as CDK writes it: operator → context key → values (any one may match). */
type PolicyCondition = Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;

/** The request context keys a request carries for IAM's conditions (e.g. `bedrock:InferenceProfileArn`). */
export type RequestContext = Readonly<Record<string, string>>;

interface Statement {
  readonly actions: ReadonlySet<string>;
  /** ARNs, where `*` matches any run of characters, as in an IAM policy. */
  readonly resources: readonly RegExp[];
  /** Every one must hold; a key the request does not carry fails its test, as IAM's operators without IfExists do. */
  readonly conditions: readonly ((context: RequestContext) => boolean)[];
}

/**
 * An identity-based policy: allowed only when a statement names both the action and the resource, and its conditions hold for the request.
 */
export interface Policy {
  allows(action: string, resource: string, context?: RequestContext): boolean;
}

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
/** IAM's condition operators the twin's roles use, each turning a policy value into a test of the request's value. */
const OPERATORS: Record<string, (pattern: string) => (value: string) => boolean> = {
  StringEquals: (pattern) => (value) => value === pattern,
  /** `*` any run of characters, `?` any one character, case-sensitive. */
  StringLike: (pattern) => {
    const regex = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')}$`,
    );
    return (value) => regex.test(value);
  },
};

function conditionsOf(condition: PolicyCondition): Statement['conditions'] {
  return Object.entries(condition).flatMap(([operator, keys]) => {
    const matcher = OPERATORS[operator];
    if (!matcher) throw new Error(`The twin's policy model has no condition operator ${operator}`);
    return Object.entries(keys).map(([key, values]) => {
      const tests = values.map(matcher);
      return (context: RequestContext) => {
        const value = context[key];
        return value !== undefined && tests.some((test) => test(value));
      };
    });
  });
}

const statement = (actions: readonly string[], resources: readonly string[], condition: PolicyCondition = {}): Statement => ({
  actions: new Set(actions),
  resources: resources.map(glob),
  conditions: conditionsOf(condition),
});

function policyOf(statements: readonly Statement[]): Policy {
  return {
    allows: (action, resource, context = {}) =>
      statements.some(
        (candidate) =>
          candidate.actions.has(action) &&
          candidate.resources.some((pattern) => pattern.test(resource)) &&
          candidate.conditions.every((holds) => holds(context)),
      ),
  };
}

/**
 * The local twin's copy of the role CDK gives the function: the same action lists (functions/shared/resources.ts)
 * on the local ARNs of the same tables, prefixes and state machines, and for Bedrock the grant
 * lib/cdk/constructs/inference-profiles.ts writes: the deployment's application inference profiles (`inferenceProfiles`,
 * model id → ARN, as the twin created them), and what they copy on the condition that the call names one of them
 * (`throughProfilesCondition`), so the step function cannot call a model directly. The twin always passes its
 * profiles; without them (tests of the model grants alone) what the models need is granted unconditioned. With a
 * third-party model in the list, the three Marketplace actions lib/cdk/constructs/workflow-engine.ts grants, on the
 * same conditions (the calls Bedrock makes on the function's behalf, Subscribe to the allowed products).
 * `conditionArns` replaces the profiles in the condition (tests: a role whose condition names the wrong ARNs).
 */
export function functionPolicy(
  declaration: FunctionDeclaration,
  bedrockModels: readonly string[] = defaultBedrockModels(LOCAL_REGION),
  inferenceProfiles?: ReadonlyMap<string, string>,
  conditionArns?: readonly string[],
): Policy {
  const statements: Statement[] = [];
  for (const [table, access] of Object.entries(declaration.tables) as [TableName, Access][]) {
    const arn = localTableArn(table);
    const withIndexes = TABLE_DEFINITIONS[table].indexes.length > 0 ? [arn, `${arn}/index/*`] : [arn];
    statements.push(statement(TABLE_ACTIONS[access], withIndexes));
  }
  for (const grant of Object.values(declaration.buckets ?? {})) {
    for (const [prefix, access] of Object.entries(grant ?? {}) as [BucketPrefix, ObjectAccess][]) {
      statements.push(statement(OBJECT_ACTIONS[access], [objectArnOf(LOCAL_BUCKET, `${prefix}*`)]));
    }
  }
  for (const [machine, accesses] of Object.entries(declaration.stateMachines ?? {}) as [
    StateMachineName,
    readonly StateMachineAccess[],
  ][]) {
    for (const access of accesses) {
      statements.push(
        statement(STATE_MACHINE_ACTIONS[access], [access === 'stop' ? localExecutionsArn(machine) : localStateMachineArn(machine)]),
      );
    }
  }
  if (declaration.invokesBedrock) {
    const models = bedrockModelArns(bedrockModels, { partition: 'aws', region: LOCAL_REGION, account: LOCAL_ACCOUNT });
    if (inferenceProfiles) {
      const profiles = bedrockModels.flatMap((model) => inferenceProfiles.get(model) ?? []);
      statements.push(statement(PROFILE_ACTIONS, profiles));
      statements.push(statement(INVOKE_ACTIONS, models, throughProfilesCondition(conditionArns ?? profiles)));
    } else {
      statements.push(statement(INVOKE_ACTIONS, models));
    }
    for (const grant of marketplaceGrants(bedrockModels)) statements.push(statement(grant.actions, ['*'], grant.conditions));
  }
  if (declaration.readsSecrets)
    statements.push(statement(['ssm:GetParameter', 'ssm:GetParameters'], [`${parameterArnOf(LOCAL_SECRETS_PREFIX)}/*`]));
  return policyOf(statements);
}

/** The operator's own credentials (admin CLI, tests' assertions on stored state): everything, as an account admin. */
export const ADMINISTRATOR_POLICY: Policy = { allows: () => true };

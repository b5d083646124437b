import {
  BEDROCK_SERVICE_PRINCIPAL,
  bedrockModelArns,
  CALLED_VIA_LAST_KEY,
  INFERENCE_PROFILE_ARN_KEY,
  MARKETPLACE_PRODUCT_KEY,
  marketplaceProductIds,
  profileTarget,
} from '#lib/cdk/bedrock-models.ts';
import { LOCAL_ACCOUNT, LOCAL_STATE_MACHINE_ARN, objectArnOf, parameterArnOf, tableArnOf } from '#lib/twin/local-arns.ts';
import { LOCAL_REGION } from '#lib/twin/stores.ts';
import { localApplicationProfile } from '#lib/twin/bedrock-profiles.ts';
import { ACCOUNT_SETTINGS_PATH } from '#lib/twin/lambda-account-stand-in.ts';
import { localAlarmArn } from '#lib/twin/local-alarms.ts';
import type { RequestContext } from './function-policy.ts';

/** One IAM check a request needs: the action, the ARN it acts on, and the request context the policy's conditions see. */
export interface Permission {
  action: string;
  resource: string;
  /** Condition keys the request carries (Bedrock: `bedrock:InferenceProfileArn`, the inference profile a call names). */
  context?: RequestContext;
  /**
   * What the service answers when this check fails, where that is not IAM's own "is not authorized to perform"
   * (Bedrock's words for the Marketplace actions it takes on the caller's behalf).
   */
  refusal?: string;
}

export interface ServiceRequest {
  method: string;
  /** The path and query as sent on the wire. */
  url: string;
  target: string;
  body: Buffer;
}

export type Json = Record<string, unknown>;

/** A JSON request's body as an object ({} when it is not one); parsed once per request (the front door asks twice). */
const parsedBodies = new WeakMap<Buffer, Json>();

export function jsonBody(body: Buffer): Json {
  let parsed = parsedBodies.get(body);
  if (!parsed) {
    try {
      const value = JSON.parse(body.toString('utf8') || '{}') as unknown;
      parsed = value && typeof value === 'object' ? (value as Json) : {};
    } catch {
      parsed = {};
    }
    parsedBodies.set(body, parsed);
  }
  return parsed;
}

const TRANSACT_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
};

/** DynamoDB authorizes each table (and index) an operation names; batch and transaction calls name several. */
export function dynamodbPermissions(request: ServiceRequest): Permission[] {
  const operation = request.target.replace(/^DynamoDB_\d+\./, '');
  const input = jsonBody(request.body);
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') {
    return Object.keys((input.RequestItems as Json | undefined) ?? {}).map((table) => ({
      action: `dynamodb:${operation}`,
      resource: tableArnOf(table),
    }));
  }
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    return ((input.TransactItems as Json[] | undefined) ?? []).flatMap((item) =>
      Object.entries(item).map(([kind, value]) => ({
        action: `dynamodb:${TRANSACT_ACTIONS[kind] ?? kind}`,
        resource: tableArnOf(String((value as Json).TableName)),
      })),
    );
  }
  if (typeof input.TableName !== 'string') return [{ action: `dynamodb:${operation}`, resource: tableArnOf('*') }];
  const table = tableArnOf(input.TableName);
  const resource = typeof input.IndexName === 'string' ? `${table}/index/${input.IndexName}` : table;
  return [{ action: `dynamodb:${operation}`, resource }];
}

/** Step Functions authorizes a start on the state machine, a stop or describe on the execution, task answers on the state machine. */
export function stepFunctionsPermissions(request: ServiceRequest): Permission[] {
  const operation = request.target.replace(/^AWSStepFunctions\./, '');
  const input = jsonBody(request.body);
  const action = `states:${operation}`;
  if (operation === 'StartExecution') return [{ action, resource: String(input.stateMachineArn) }];
  if (operation === 'StopExecution' || operation === 'DescribeExecution') return [{ action, resource: String(input.executionArn) }];
  // Task tokens come only from the workflow state machine (AwaitApproval); the collection's definition has no token task.
  if (operation.startsWith('SendTask')) return [{ action, resource: LOCAL_STATE_MACHINE_ARN }];
  return [{ action, resource: `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:*` }];
}

/** S3 (path-style URLs): object operations on `bucket/key`; anything on the bucket itself is a bucket action. */
export function s3Permissions(request: ServiceRequest): Permission[] {
  const queryAt = request.url.indexOf('?');
  const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt);
  const query = new URLSearchParams(queryAt < 0 ? '' : request.url.slice(queryAt + 1));
  const [, bucket = '', ...keyParts] = path.split('/');
  const key = keyParts.map((part) => decodeURIComponent(part)).join('/');
  if (!key) {
    const action = request.method === 'GET' || request.method === 'HEAD' ? 's3:ListBucket' : `s3:${request.method}Bucket`;
    return [{ action, resource: `arn:aws:s3:::${bucket}` }];
  }
  const resource = objectArnOf(bucket, key);
  switch (request.method) {
    case 'GET':
    case 'HEAD':
      return [{ action: 's3:GetObject', resource }];
    case 'PUT':
    case 'POST':
      return [{ action: 's3:PutObject', resource }];
    case 'DELETE':
      return [{ action: query.has('uploadId') ? 's3:AbortMultipartUpload' : 's3:DeleteObject', resource }];
    default:
      return [{ action: `s3:${request.method}`, resource }];
  }
}

/** SSM authorizes each parameter a call names (GetParameters: each of its names); a path read authorizes the path. */
export function ssmPermissions(request: ServiceRequest): Permission[] {
  const operation = request.target.replace(/^AmazonSSM\./, '');
  const input = jsonBody(request.body);
  const action = `ssm:${operation}`;
  if (operation === 'GetParameters')
    return ((input.Names as unknown[] | undefined) ?? []).map((name) => ({ action, resource: parameterArnOf(String(name)) }));
  if (operation === 'GetParametersByPath') return [{ action, resource: parameterArnOf(String(input.Path)) }];
  return [{ action, resource: parameterArnOf(String(input.Name)) }];
}

/**
 * Cost Explorer (JSON 1.1, target prefix `AWSInsightsIndexService.`): its cost allocation tag actions
 * (`ce:ListCostAllocationTags`, `ce:UpdateCostAllocationTagsStatus`) name no resource type, so IAM checks them on `*`.
 */
export function costExplorerPermissions(request: ServiceRequest): Permission[] {
  return [{ action: `ce:${request.target.replace(/^AWSInsightsIndexService\./, '')}`, resource: '*' }];
}

/**
 * CloudWatch alarms (JSON 1.0, target prefix `GraniteServiceVersion20100801.`): SetAlarmState, and DescribeAlarmHistory
 * of one alarm, act on that alarm's ARN; DescribeAlarms, and the history of every alarm, on `*`.
 */
export function cloudWatchPermissions(request: ServiceRequest): Permission[] {
  const operation = request.target.replace(/^GraniteServiceVersion20100801\./, '');
  const { AlarmName } = jsonBody(request.body);
  const onAlarm = typeof AlarmName === 'string' && operation !== 'DescribeAlarms';
  return [{ action: `cloudwatch:${operation}`, resource: onAlarm ? localAlarmArn(AlarmName) : '*' }];
}

/** Lambda (REST): `GET /2016-08-19/account-settings` is `lambda:GetAccountSettings`, an action on no resource (`*`). */
export function lambdaPermissions(request: ServiceRequest): Permission[] {
  const path = request.url.split('?')[0];
  if (request.method === 'GET' && path === ACCOUNT_SETTINGS_PATH) return [{ action: 'lambda:GetAccountSettings', resource: '*' }];
  return [{ action: 'lambda:Unknown', resource: '*' }];
}

const BEDROCK_ACTIONS: Record<string, string> = {
  'converse-stream': 'bedrock:InvokeModelWithResponseStream',
  'invoke-with-response-stream': 'bedrock:InvokeModelWithResponseStream',
  converse: 'bedrock:InvokeModel',
  invoke: 'bedrock:InvokeModel',
};

/**
 * Where a cross-region inference profile may route a call, by its geography. IAM authorizes the foundation model in
 * the region the call lands in, so a grant must cover all of them; a grant on the local region's model alone would
 * pass here and fail on AWS whenever the profile routes elsewhere.
 */
const PROFILE_REGIONS: Record<string, readonly string[]> = {
  us: ['us-east-1', 'us-east-2', 'us-west-2'],
  'us-gov': ['us-gov-east-1', 'us-gov-west-1'],
  eu: ['eu-central-1', 'eu-north-1', 'eu-west-1', 'eu-west-3'],
  apac: ['ap-northeast-1', 'ap-northeast-2', 'ap-south-1', 'ap-southeast-1', 'ap-southeast-2'],
  ca: ['ca-central-1', 'ca-west-1'],
  jp: ['ap-northeast-1', 'ap-northeast-3'],
  au: ['ap-southeast-2', 'ap-southeast-4'],
  global: ['us-east-1', 'us-west-2', 'eu-west-1', 'ap-northeast-1', 'sa-east-1'],
};

const INFERENCE_PROFILE_ARN = /^arn:aws:bedrock:[^:]*:[^:]*:inference-profile\/(.+)$/;

/**
 * Bedrock Runtime (REST): `/model/<id>/<operation>` acts on the foundation model the id names, or on the inference
 * profile and the model in every region it routes to. An ARN names its own resource; an application inference
 * profile the twin created (lib/twin/bedrock-profiles.ts) also needs `bedrock:GetInferenceProfile` on itself ("Required
 * to run inference with an inference profile", docs.aws.amazon.com/bedrock/latest/userguide/inference-prereq.html;
 * CDK grants it, PROFILE_ACTIONS in lib/cdk/bedrock-models.ts) and the invoke action on what it copies, as Bedrock
 * authorizes the model behind the profile too. Every check of a call through a profile (the twin's application
 * profiles, or a system cross-region profile) carries that profile's ARN as `bedrock:InferenceProfileArn`, which the
 * step function's role requires on what the profiles copy; a direct call to a model carries none. A third-party
 * model's call needs the Marketplace actions Bedrock takes for its subscription too (marketplacePermissions).
 *
 * What AWS documents (docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html): a role that may
 * invoke an inference profile "must also specify the foundation model in each Region associated with it", and
 * `bedrock:InferenceProfileArn` in a statement "that scopes to the foundation-model resources" holds a model to calls
 * through the inference profile it names. What it does not: whether a call through an application profile that copies
 * a cross-region profile is also authorized on that cross-region profile (the twin asks for it, the stricter reading),
 * and which ARN the key then carries. The twin carries the profile the call named, the only reading under which a role
 * can hold a cross-region model to its application profiles; `admin verify`'s step-model check proves it on AWS.
 */
export function bedrockPermissions(request: ServiceRequest): Permission[] {
  const match = /^\/model\/([^/?]+)\/([a-z-]+)(?:\?|$)/.exec(request.url);
  if (!match) return [{ action: 'bedrock:Unknown', resource: '*' }];
  let modelId: string;
  try {
    modelId = decodeURIComponent(match[1]!);
  } catch {
    return [{ action: 'bedrock:Unknown', resource: '*' }];
  }
  const action = BEDROCK_ACTIONS[match[2]!] ?? `bedrock:${match[2]}`;
  const application = localApplicationProfile(modelId);
  const invoked = application?.model ?? modelId;
  const needs = application
    ? [
        { action, resource: application.arn },
        { action: 'bedrock:GetInferenceProfile', resource: application.arn },
        ...modelPermissions(invoked, action),
      ]
    : modelPermissions(invoked, action);
  const profile = application?.arn ?? systemProfileArn(modelId);
  const withProfile =
    profile === undefined ? needs : needs.map((needed) => ({ ...needed, context: { [INFERENCE_PROFILE_ARN_KEY]: profile } }));
  return [...withProfile, ...marketplacePermissions(invoked)];
}

/** The ARN of the system cross-region inference profile an id (`us.<model>`) or ARN names, in the twin's region and account. */
function systemProfileArn(modelId: string): string | undefined {
  if (modelId.startsWith('arn:')) return INFERENCE_PROFILE_ARN.test(modelId) ? modelId : undefined;
  return profileTarget(modelId)
    ? bedrockModelArns([modelId], { partition: 'aws', region: LOCAL_REGION, account: LOCAL_ACCOUNT })[0]
    : undefined;
}

/** The model or inference profile id an id or a system profile's ARN names (undefined for another ARN). */
const profileIdOf = (modelId: string) => (modelId.startsWith('arn:') ? INFERENCE_PROFILE_ARN.exec(modelId)?.[1] : modelId);

/** What invoking a model id or an ARN needs, with `action`: see bedrockPermissions. */
function modelPermissions(modelId: string, action: string): Permission[] {
  const profileId = profileIdOf(modelId);
  const target = profileId === undefined ? undefined : profileTarget(profileId);
  const [own] = modelId.startsWith('arn:')
    ? [modelId]
    : bedrockModelArns([modelId], { partition: 'aws', region: LOCAL_REGION, account: LOCAL_ACCOUNT });
  const routed = target
    ? (PROFILE_REGIONS[target.geography] ?? [LOCAL_REGION]).map((region) => `arn:aws:bedrock:${region}::foundation-model/${target.model}`)
    : [];
  return [own!, ...routed].map((resource) => ({ action, resource }));
}

/**
 * Bedrock's answer (AccessDeniedException, 403) to a third-party model's first call by a role lacking any of the
 * three Marketplace actions, word for word: it names two of them, whichever is missing.
 */
const MARKETPLACE_REFUSAL =
  'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions ' +
  '(aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model. Refer to the Amazon Bedrock ' +
  'documentation for further details. Your AWS Marketplace subscription for this model cannot be completed at this time. If you ' +
  'recently fixed this issue, try again after 2 minutes.';

/**
 * A third-party model's first call in an account subscribes it to the model's Marketplace product: Bedrock calls
 * AWS Marketplace on the caller's behalf, with the caller's role, so each of the three actions is checked with
 * `aws:CalledViaLast` = `bedrock.amazonaws.com`, and Subscribe with the product as `aws-marketplace:ProductId`
 * (docs.aws.amazon.com/bedrock/latest/userguide/model-access.html). Checked on every call, not only an account's first:
 * the twin keeps no subscriptions, and a role that could not subscribe would fail on a fresh account. The checks
 * carry no inference profile: Marketplace is not Bedrock, and its requests have no `bedrock:` keys.
 */
function marketplacePermissions(modelId: string): Permission[] {
  const profileId = profileIdOf(modelId);
  const model = (profileId === undefined ? undefined : profileTarget(profileId)?.model) ?? profileId ?? modelId;
  const byBedrock = { [CALLED_VIA_LAST_KEY]: BEDROCK_SERVICE_PRINCIPAL };
  return marketplaceProductIds([model]).flatMap((product): Permission[] => [
    {
      action: 'aws-marketplace:Subscribe',
      resource: marketplaceProductResource(product),
      context: { ...byBedrock, [MARKETPLACE_PRODUCT_KEY]: product },
      refusal: MARKETPLACE_REFUSAL,
    },
    { action: 'aws-marketplace:ViewSubscriptions', resource: '*', context: byBedrock, refusal: MARKETPLACE_REFUSAL },
    { action: 'aws-marketplace:Unsubscribe', resource: '*', context: byBedrock, refusal: MARKETPLACE_REFUSAL },
  ]);
}

/**
 * IAM names no Marketplace resource (a policy holds Subscribe to a product by its condition key, which the check
 * carries too): the twin names the product as the Subscribe check's resource, so that its list of refusals says which.
 */
const marketplaceProductResource = (productId: string) => `aws-marketplace:product/${productId}`;

import { Validations, type Stack, type CfnElement } from 'aws-cdk-lib';
import type { Data } from './constructs/data.ts';
import type { WorkflowEngine } from './constructs/workflow-engine.ts';

/** cdk-nag findings this product accepts on purpose, each with the reason. */
export function acknowledgeNagFindings(stack: Stack, data: Data, engine: WorkflowEngine): void {
  const acknowledge = (id: string, reason: string) => Validations.of(stack).acknowledge({ id, reason });
  const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
    stack.getLogicalId(construct.node.defaultChild as CfnElement);

  acknowledge('AwsSolutions-S1', 'The bodies bucket is written only by the product functions, whose calls CloudTrail and function logs record; server access logs would double the request bill.');
  acknowledge('AwsSolutions-APIG2', "Requests are validated in the functions with zod, which is what produces the spec's exact 400 body shape.");
  acknowledge('AwsSolutions-APIG3', 'AWS WAF carries a fixed monthly charge per web ACL; this product stays pay-per-request and limits abuse per link, per key and per client IP in the functions.');
  acknowledge('AwsSolutions-APIG4', 'Webhook routes authenticate by the secret token in the path (spec section 5); workflow routes by API key checked in the function.');
  acknowledge('AwsSolutions-COG4', 'Callers are external systems with link tokens or API keys, not Cognito users.');
  acknowledge(
    'AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    'The AWS managed basic execution policy only lets a function write its own logs.',
  );
  acknowledge(
    'AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
    'The account-level role API Gateway needs to write execution logs; AWS maintains it.',
  );
  acknowledge('AwsSolutions::AwsSolutions-IAM5[Resource::*]', 'X-Ray PutTraceSegments/PutTelemetryRecords accept no resource other than *.');
  acknowledge(
    `AwsSolutions::AwsSolutions-IAM5[Resource::<${logicalId(data.bodiesBucket)}.Arn>/inbound/*]`,
    'Object keys are per event; access is limited to the inbound/ prefix and to object-level actions.',
  );
  for (const table of Object.values(data.tables)) {
    acknowledge(
      `AwsSolutions::AwsSolutions-IAM5[Resource::<${logicalId(table)}.Arn>/index/*]`,
      "Granting a table's read access includes its own indexes; the wildcard never reaches another table.",
    );
  }
  acknowledge(
    'AwsSolutions-SF1',
    'Standard workflows keep every execution history for 90 days at no charge; logging ALL events would bill each transition again in CloudWatch. Errors are logged.',
  );
  for (const fn of Object.values(engine.functions)) {
    acknowledge(
      `AwsSolutions::AwsSolutions-IAM5[Resource::<${logicalId(fn)}.Arn>:*]`,
      "Step Functions invokes a function's versions and aliases; the wildcard never reaches another function.",
    );
  }
  acknowledge(
    'AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/*]',
    'Which Bedrock model an llm node uses is workflow data chosen at publish time; only streaming invocation is allowed.',
  );
  acknowledge(
    'AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*:<AWS::AccountId>:inference-profile/*]',
    "Cross-region inference profiles of the account's own, for the same reason as foundation models.",
  );
  acknowledge(
    `AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"${logicalId(engine.stateMachine)}"}]}]}:*]`,
    'Stopping is granted on the executions of the one workflow state machine; execution names are per run.',
  );
}

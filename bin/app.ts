import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { PlatformStack } from '#lib/cdk/stack.ts';

// The app writes nothing on a synth that succeeds (the CDK CLI adds one empty line, its report of the checks that
// passed), so that any finding stands out; CDK's progress line for each function it bundles ("Bundling asset
// <path>...", written on stderr the first time an asset is built) is dropped.
const writeStderr = process.stderr.write.bind(process.stderr) as (chunk: unknown, ...rest: unknown[]) => boolean;
const dropBundlingLines = (chunk: unknown, ...rest: unknown[]) =>
  typeof chunk === 'string' && /^Bundling asset \S+\.\.\.\n$/.test(chunk) ? true : writeStderr(chunk, ...rest);
process.stderr.write = dropBundlingLines;

const app = new App();
// The CLI sets CDK_DEFAULT_REGION from AWS_REGION, else the profile's region, else us-east-1; the stack is
// synthesized for that region (its Bedrock profiles depend on it), the account stays the deploying one's.
new PlatformStack(app, (app.node.tryGetContext('stackName') as string | undefined) ?? 'WorkflowIngestPlatform', {
  env: { region: process.env.CDK_DEFAULT_REGION },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

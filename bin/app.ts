import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { PlatformStack } from '#lib/cdk/stack.ts';

const app = new App();
new PlatformStack(app, (app.node.tryGetContext('stackName') as string | undefined) ?? 'WorkflowIngestPlatform');
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

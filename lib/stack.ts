import { Stack, type StackProps, RemovalPolicy } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { routes } from '../functions/routes.ts';
import { Api } from './constructs/api.ts';
import { Data } from './constructs/data.ts';
import { WorkflowEngine } from './constructs/workflow-engine.ts';
import { acknowledgeNagFindings } from './nag-acknowledgements.ts';

export interface PlatformStackProps extends StackProps {
  /** @default RemovalPolicy.RETAIN */
  readonly dataRemovalPolicy?: RemovalPolicy;
}

/** Composes the product's constructs; nothing else. */
export class PlatformStack extends Stack {
  public readonly data: Data;
  public readonly api: Api;
  public readonly engine: WorkflowEngine;

  constructor(scope: Construct, id: string, props: PlatformStackProps = {}) {
    super(scope, id, props);
    this.data = new Data(this, 'Data', { removalPolicy: props.dataRemovalPolicy });
    this.engine = new WorkflowEngine(this, 'Engine', { data: this.data });
    this.api = new Api(this, 'Api', { routes, data: this.data, engine: this.engine });
    acknowledgeNagFindings(this, { data: this.data, engine: this.engine, api: this.api });
  }
}

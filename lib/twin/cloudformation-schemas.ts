import { createRequire } from 'node:module';

/**
 * CloudFormation's own resource provider schemas, read through the validator CDK synthesizes with
 * (`@aws/cloudformation-validate`, which aws-cdk-lib bundles: the same schemas and the same version that fail
 * `npm run synth`). The twin asks it where AWS publishes a rule in machine-readable form, instead of restating the
 * rule: a stand-in that created what CloudFormation refuses would be more forgiving than AWS.
 */
interface Diagnostic {
  severity: 'FATAL' | 'ERROR' | 'WARN' | 'INFO' | 'DEBUG';
  ruleId: string;
  message: string;
  propertyPath?: string;
}
interface ValidatorModule {
  SchemaValidator: new () => { validate(template: unknown, region?: string): Diagnostic[] };
  TemplateContent: new (content: string, name?: string) => unknown;
}

let loaded: { module: ValidatorModule; validator: InstanceType<ValidatorModule['SchemaValidator']> } | undefined;

/** Compiled once per process (about 130 ms), never freed: its schemas are what every later check reads. */
function schemaValidator(): NonNullable<typeof loaded> {
  if (!loaded) {
    const fromCdk = createRequire(createRequire(import.meta.url).resolve('aws-cdk-lib/package.json'));
    const module = fromCdk('@aws/cloudformation-validate') as ValidatorModule;
    loaded = { module, validator: new module.SchemaValidator() };
  }
  return loaded;
}

/** One refusal of the schema: the property it names (`InferenceProfileName`) and the schema's message. */
export interface SchemaRefusal {
  property: string;
  message: string;
  ruleId: string;
}

/**
 * What the resource schema of `type` refuses in `properties` in `region` (errors only: a create-only note or a
 * best-practice warning is not a refusal). Empty when CloudFormation would take the resource.
 */
export function schemaRefusals(type: string, properties: Record<string, unknown>, region: string): SchemaRefusal[] {
  const { module, validator } = schemaValidator();
  const template = JSON.stringify({ Resources: { Resource: { Type: type, Properties: properties } } });
  return validator
    .validate(new module.TemplateContent(template, `${type}.json`), region)
    .filter((diagnostic) => diagnostic.severity === 'FATAL' || diagnostic.severity === 'ERROR')
    .map((diagnostic) => ({
      property: (diagnostic.propertyPath ?? type).replace(/^Properties\./, ''),
      message: diagnostic.message,
      ruleId: diagnostic.ruleId,
    }));
}

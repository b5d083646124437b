import { GetParametersCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { secretParameterName } from '#shared/resources.ts';
import type { SecretSource } from './tool-types.ts';

/** A project's secrets as SSM SecureString parameters under the stack's prefix: one GetParameters per tool call's new names. */
export function ssmSecretSource(client: SSMClient, prefix: string): SecretSource {
  return {
    async values(projectId, names) {
      const byParameter = new Map(names.map((name) => [secretParameterName(prefix, projectId, name), name]));
      const answer = await client.send(new GetParametersCommand({ Names: [...byParameter.keys()], WithDecryption: true }));
      const values = new Map<string, string>();
      for (const parameter of answer.Parameters ?? []) {
        const name = parameter.Name === undefined ? undefined : byParameter.get(parameter.Name);
        if (name !== undefined && parameter.Value !== undefined) values.set(name, parameter.Value);
      }
      return values;
    },
  };
}

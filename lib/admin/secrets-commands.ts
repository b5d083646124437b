import { DeleteParameterCommand, GetParametersByPathCommand, ParameterNotFound, PutParameterCommand } from '@aws-sdk/client-ssm';
import { SECRET_NAME_PATTERN } from '#shared/limits.ts';
import { secretParameterName } from '#shared/resources.ts';
import { projectOption } from './publication-commands.ts';
import type { AdminTarget } from './target.ts';
import { requireArgument, UsageError } from './usage-error.ts';

/** SSM SecureString values of the Standard tier. */
const MAX_SECRET_VALUE_CHARS = 4096;

function secretName(value: string | undefined, command: string): string {
  const name = requireArgument(value, command, 'NAME');
  if (!SECRET_NAME_PATTERN.test(name)) throw new UsageError(`${command}: a secret name is 1-128 letters, digits, _ . or -`);
  return name;
}

/**
 * The `{{secret.NAME}}` values of a project's tools: SSM SecureString parameters under the stack's prefix (on the
 * twin, its SSM stand-in). A value comes from stdin (at a terminal, a prompt that does not echo), so it is in no
 * shell history and no process list, and it is never printed back.
 */
export async function runSecretsCommand(
  target: AdminTarget,
  args: string[],
  flags: { project?: string },
  stdin: (prompt?: string) => Promise<string>,
): Promise<object> {
  const [action, name] = args;
  const project = projectOption(flags.project);
  const { ssm, prefix } = await target.secrets();
  switch (action) {
    case 'set': {
      const secret = secretName(name, 'secrets set');
      const value = (await stdin(`Value of secret ${secret} for project ${project} (not shown): `)).replace(/\r?\n$/, '');
      if (value.length === 0) throw new UsageError('secrets set reads the value from stdin, and stdin was empty');
      if (value.length > MAX_SECRET_VALUE_CHARS) throw new UsageError(`a secret value is at most ${MAX_SECRET_VALUE_CHARS} characters`);
      const answer = await ssm.send(
        new PutParameterCommand({
          Name: secretParameterName(prefix, project, secret),
          Value: value,
          Type: 'SecureString',
          Overwrite: true,
        }),
      );
      return { project_id: project, name: secret, version: answer.Version };
    }
    case 'list': {
      const names: { name: string; version: number | undefined; last_modified: string | undefined }[] = [];
      const path = secretParameterName(prefix, project, '').replace(/\/$/, '');
      let NextToken: string | undefined;
      do {
        const page = await ssm.send(new GetParametersByPathCommand({ Path: path, WithDecryption: false, NextToken }));
        for (const parameter of page.Parameters ?? []) {
          names.push({
            name: parameter.Name!.slice(path.length + 1),
            version: parameter.Version,
            last_modified: parameter.LastModifiedDate?.toISOString(),
          });
        }
        NextToken = page.NextToken;
      } while (NextToken);
      return { project_id: project, secrets: names };
    }
    case 'delete': {
      const secret = secretName(name, 'secrets delete');
      try {
        await ssm.send(new DeleteParameterCommand({ Name: secretParameterName(prefix, project, secret) }));
      } catch (error) {
        if (error instanceof ParameterNotFound) throw new Error(`project ${project} has no secret ${secret}`, { cause: error });
        throw error;
      }
      return { project_id: project, name: secret, deleted: true };
    }
    default:
      throw new UsageError(`unknown secrets action ${action ?? ''}; use set, list or delete`);
  }
}

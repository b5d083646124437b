import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';

/**
 * Where `admin verify --alarms` finds the stack's alarms: what their names start with (`<stack>-`, as CloudFormation
 * names them), and CloudWatch in the stack's region. The client is made on first use: only that check loads the SDK
 * module.
 */
export interface StackAlarms {
  namePrefix: string;
  cloudWatch(): Promise<CloudWatchClient>;
  destroy(): void;
}

export function stackAlarms(
  namePrefix: string,
  config: { region: string; endpoint?: string; credentials?: { accessKeyId: string; secretAccessKey: string } },
): StackAlarms {
  let client: Promise<CloudWatchClient> | undefined;
  let made: CloudWatchClient | undefined;
  return {
    namePrefix,
    cloudWatch: () =>
      (client ??= import('@aws-sdk/client-cloudwatch').then(({ CloudWatchClient }) => (made = new CloudWatchClient(config)))),
    destroy: () => made?.destroy(),
  };
}

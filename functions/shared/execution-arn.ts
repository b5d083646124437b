/**
 * arn:aws:states:region:account:stateMachine:name → arn:aws:states:region:account:execution:name:executionName.
 * Apart from the gateway so that services and tests name executions without loading the SFN client.
 */
export function executionArnOf(stateMachineArn: string, executionName: string): string {
  return `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionName}`;
}

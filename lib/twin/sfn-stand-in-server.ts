import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StepFunctionsError, type LocalStepFunctions } from './sfn-stand-in.ts';

/**
 * Serves the Step Functions JSON 1.0 protocol (`X-Amz-Target: AWSStepFunctions.<Operation>`) for the
 * operations the product calls, so handlers use the real @aws-sdk/client-sfn with only an endpoint changed.
 */
type Operation = (stepFunctions: LocalStepFunctions, input: Record<string, string | undefined>) => unknown;

const OPERATIONS: Record<string, Operation> = {
  StartExecution: (sfn, input) => sfn.startExecution(input.stateMachineArn ?? '', input.name, input.input ?? '{}'),
  DescribeExecution: (sfn, input) => sfn.describeExecution(input.executionArn ?? ''),
  StopExecution: (sfn, input) => sfn.stopExecution(input.executionArn ?? '', input.error, input.cause),
  SendTaskSuccess: (sfn, input) => sfn.sendTaskSuccess(input.taskToken ?? '', input.output ?? 'null'),
  SendTaskFailure: (sfn, input) => sfn.sendTaskFailure(input.taskToken ?? '', input.error, input.cause),
};

export async function startStepFunctionsServer(
  stepFunctions: LocalStepFunctions,
  port: number,
): Promise<{ endpoint: string; server: Server }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const reply = (status: number, body: unknown, errorType?: string) => {
        response.writeHead(status, {
          'content-type': 'application/x-amz-json-1.0',
          ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
        });
        response.end(JSON.stringify(body));
      };
      const operationName = String(request.headers['x-amz-target'] ?? '').replace(/^AWSStepFunctions\./, '');
      const operation = OPERATIONS[operationName];
      if (!operation)
        return reply(
          400,
          { __type: 'UnknownOperationException', message: `Unsupported operation ${operationName}` },
          'UnknownOperationException',
        );
      try {
        const input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, string>;
        reply(200, operation(stepFunctions, input));
      } catch (error) {
        const name = error instanceof StepFunctionsError ? error.name : 'InvalidParameterValueException';
        reply(400, { __type: name, message: (error as Error).message }, name);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

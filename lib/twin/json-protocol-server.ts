import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** An error answer as the service sends it: its status, its headers besides the content type, and its JSON body. */
export interface JsonProtocolAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * A stand-in for an AWS service on the JSON protocol (`X-Amz-Target: <prefix><Operation>`, a JSON object in, a JSON
 * object out), as the SSM, Cost Explorer and CloudWatch stand-ins serve it: an unknown operation, a body that is not
 * JSON or not an object, and any failure of an operation are answered as the service answers them (`refusal`).
 */
export function jsonProtocolServer(options: {
  targetPrefix: string;
  contentType: string;
  operations: Record<string, (input: Record<string, unknown>) => unknown>;
  /** Where the request is not one of `operations`, its body not JSON, or its body not an object: the error to throw. */
  unknownOperation: (target: string) => Error;
  notJson: () => Error;
  notObject: () => Error;
  /** How any error thrown while serving (an operation's own, or one of the above) is answered. */
  refusal: (error: unknown) => JsonProtocolAnswer;
}): Server {
  const { operations, targetPrefix } = options;
  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of request) chunks.push(chunk as Buffer);
    } catch {
      return void response.destroy();
    }
    const target = String(request.headers['x-amz-target'] ?? '');
    const name = target.startsWith(targetPrefix) ? target.slice(targetPrefix.length) : '';
    const operation = Object.hasOwn(operations, name) ? operations[name] : undefined;
    try {
      if (request.method !== 'POST' || !operation) throw options.unknownOperation(target);
      let input: unknown;
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      } catch {
        throw options.notJson();
      }
      if (typeof input !== 'object' || input === null || Array.isArray(input)) throw options.notObject();
      const output = JSON.stringify(operation(input as Record<string, unknown>));
      response.writeHead(200, { 'content-type': options.contentType }).end(output);
    } catch (error) {
      const answer = options.refusal(error);
      response.writeHead(answer.status, { 'content-type': options.contentType, ...answer.headers });
      response.end(JSON.stringify(answer.body));
    }
  }
  return createServer((request, response) => void serve(request, response));
}

import { createParser } from 'eventsource-parser';
import { reportViolation } from './answer-violations.ts';
import { documentedAnswer } from './openapi.ts';

/**
 * `fetch` for e2e tests that call the APIs the way a browser or the typed client does: every answer of either API is
 * held to its OpenAPI document (test/support/openapi.ts). The head is checked when it arrives (an undocumented status,
 * content type or header rejects the fetch). The body is checked as the caller reads it, passing through untouched: a
 * JSON body or a 204 when it has been read whole, an event stream event by event, so a caller that cancels its reader
 * mid-stream still cancels the request. A body that breaks the document fails the test (answer-violations.ts), and
 * errors the body's reader.
 */
export async function documentedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const request = new Request(input, init);
  const response = await fetch(request);
  const check = documentedAnswer(
    { method: request.method, url: request.url },
    { status: response.status, headers: Object.fromEntries(response.headers) },
  );
  if (!response.body) {
    check.body('');
    return response;
  }
  const isEventStream = response.headers.get('content-type')?.startsWith('text/event-stream') ?? false;
  const decoder = new TextDecoder();
  let text = '';
  const parser = createParser({
    onEvent: (message) =>
      check.event({ ...(message.id === undefined ? {} : { id: message.id }), event: message.event ?? 'message', data: message.data }),
  });
  const inspected = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const piece = decoder.decode(chunk, { stream: true });
        try {
          if (isEventStream) parser.feed(piece);
          else text += piece;
        } catch (error) {
          reportViolation(error as Error);
          controller.error(error);
          return;
        }
        controller.enqueue(chunk);
      },
      flush(controller) {
        try {
          if (!isEventStream) check.body(text + decoder.decode());
        } catch (error) {
          reportViolation(error as Error);
          controller.error(error);
        }
      },
    }),
  );
  // A Response over the inspected bytes; `url` and `redirected` are kept, as callers may read them.
  const passed = new Response(inspected, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperties(passed, { url: { value: response.url }, redirected: { value: response.redirected } });
  return passed;
}

import { NotFoundError } from '../../errors.ts';
import { asSentByGateway } from '../gateway-compression.ts';
import { isHttpApiEvent, routedPath, routeTemplate } from '../gateway-event.ts';
import { header, type HttpRequest, type HttpResponse } from '../http-stack.ts';
import type { JsonSchema } from '../openapi.ts';
import { servedDocumentResponse } from '../openapi-server.ts';
import { referencePageAnswer, referencePageResponse, referenceScriptResponse } from './api-reference.ts';
// By this path, which a bundle aliases to the script beside its code (lib/cdk/bundling/bundle.ts).
import { redocScript } from '#shared/http/api-reference/redoc-script.ts';

/** Where an API's documentation lives: the route table's paths of its four documentation routes. */
interface DocumentationPaths {
  /** The OpenAPI document as written (3.2). */
  readonly document: string;
  readonly document31: string;
  readonly page: string;
  readonly script: string;
}

export interface Documentation {
  /** The API's name, the reference page's title. */
  readonly title: string;
  readonly paths: DocumentationPaths;
  readonly document: JsonSchema;
  readonly document31: JsonSchema;
  /** What else each answer varies with (`Origin` where the routes answer browsers of other origins). */
  readonly vary?: readonly string[];
}

/**
 * One function serves an API's documentation: both documents, the reference page and its script, told apart by the
 * route that matched. A REST API compresses buffered answers itself (gateway-compression.ts); an HTTP API never does,
 * so there the function compresses the documents. Any other route is 404: the webhook API's `$default` route (every
 * request no route matches) comes here too, and gets the webhook API's error body.
 */
export function documentationAnswer(documentation: Documentation): (request: HttpRequest) => HttpResponse {
  const { paths, vary = [] } = documentation;
  const page = referencePageResponse(
    { title: documentation.title, pagePath: paths.page, documentPath: paths.document31, scriptPath: paths.script },
    redocScript,
  );
  const compressed = (request: HttpRequest, response: HttpResponse) =>
    isHttpApiEvent(request) ? asSentByGateway(response, header(request, 'accept-encoding')) : response;
  return (request) => {
    switch (routeTemplate(request)) {
      case paths.document:
        return compressed(request, servedDocumentResponse(documentation.document, request, vary));
      case paths.document31:
        return compressed(request, servedDocumentResponse(documentation.document31, request, vary));
      case paths.page:
        return referencePageAnswer(request, paths.page, page);
      case paths.script:
        return referenceScriptResponse(request, redocScript, vary);
      default:
        // An HTTP API matches `<page>/` to no route; it reaches the page as it does on the REST API.
        if (routedPath(request) === `${paths.page}/`) return referencePageAnswer(request, paths.page, page);
        throw new NotFoundError('Not Found');
    }
  };
}

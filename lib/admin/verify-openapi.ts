import { routes } from '#functions/routes.ts';
import { CheckFailure, type CheckOutcome, type VerifyCheck } from './verify-check.ts';
import { answered, apiRequest, field } from './verify-http.ts';

/** The two APIs, each serving its document at `<base>/openapi.json`, each at its own URL (`ApiUrl`, `WebhookApiUrl`). */
const API_BASES = ['/api/v1/published', '/api/v1/webhooks'] as const;

/**
 * The paths a document must list: every route of this checkout's route table under its API, as the document (which
 * is generated from the same table) names them. A path missing means the deployment runs older code than this CLI.
 */
function expectedPaths(base: string): string[] {
  return routes.filter((route) => route.path.startsWith(`${base}/`)).map((route) => route.path.slice(base.length));
}

/** `openapi`: both OpenAPI documents are served without a key, as JSON, with a version and every expected path. */
export const openApiCheck: VerifyCheck = {
  name: 'openapi',
  async run(context): Promise<CheckOutcome> {
    const documents: { path: string; openapi: string; paths: number }[] = [];
    for (const base of API_BASES) {
      const path = `${base}/openapi.json`;
      const answer = await apiRequest({ ...context, apiUrl: base === '/api/v1/webhooks' ? context.webhookUrl : context.apiUrl }, path);
      const version = field(answer, 'openapi');
      const listed = field(answer, 'paths');
      if (answer.status !== 200 || typeof version !== 'string' || typeof listed !== 'object' || listed === null) {
        throw new CheckFailure(
          `GET ${path} to answer 200 with an OpenAPI document (JSON with "openapi" and "paths")`,
          answered(answer),
          'Deploy this version (npx cdk deploy; locally restart npm start): the stage does not serve the document',
          { documents },
        );
      }
      const missing = expectedPaths(base).filter((expected) => !Object.hasOwn(listed, expected));
      if (missing.length > 0) {
        throw new CheckFailure(
          `GET ${path} to list every route of this version`,
          `a document without ${missing.join(', ')}`,
          'The deployment runs older code than this CLI: deploy this version (npx cdk deploy), then verify again',
          { documents },
        );
      }
      documents.push({ path, openapi: version, paths: Object.keys(listed).length });
    }
    return {
      status: 'pass',
      detail: documents.map((document) => `${document.path}: OpenAPI ${document.openapi}, ${document.paths} paths`).join('; '),
      documents,
    };
  },
};

import { API_STAGE, gatewayOf } from '#functions/routes.ts';

/** The base URLs of a twin's two APIs: the Published API's REST API and the webhook API's HTTP API. */
interface ApiBases {
  url: string;
  webhookUrl: string;
}

/** The host serving `path` (a route's path, `/api/v1/...`): the webhook API's for its routes, the REST API's otherwise. */
export function apiBaseFor(twin: ApiBases, path: string): string {
  return gatewayOf({ path }) === 'httpApi' ? twin.webhookUrl : twin.url;
}

/** `path` on the API serving it, without a stage path. */
export function apiUrlFor(twin: ApiBases, path: string): string {
  return `${apiBaseFor(twin, path)}${path}`;
}

/**
 * The stage path before `path` on AWS: the REST API's stage (`<ApiUrl>` ends in `/prod/`), and nothing on the webhook
 * API's HTTP API, whose `$default` stage has no path (`<WebhookApiUrl>` is its root).
 */
export function stagePathFor(path: string): string {
  return gatewayOf({ path }) === 'httpApi' ? '' : `/${API_STAGE}`;
}

/** `path` as a deployment's stack output reaches it: on the API serving it, after its stage path. */
export function awsShapedUrlFor(twin: ApiBases, path: string): string {
  return `${apiBaseFor(twin, path)}${stagePathFor(path)}${path}`;
}

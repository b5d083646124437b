import { routes, type Route } from '#functions/routes.ts';
import { corsPolicyFromEnv, type CorsPolicy } from '#shared/http/cors.ts';

/**
 * The CORS policy of a published route (CORS_ALLOWED_ORIGINS): its function also answers its resource's preflights,
 * so it names every method the route table has on that path.
 */
export function routeCors(route: Route): CorsPolicy | undefined {
  return corsPolicyFromEnv(routes.filter((candidate) => candidate.path === route.path).map((candidate) => candidate.method));
}

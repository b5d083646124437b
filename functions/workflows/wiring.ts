import { dynamo } from '#shared/clients/dynamodb.ts';
import { requireEnv } from '#shared/config.ts';
import { TABLE_ENV } from '#shared/resources.ts';
import type { PublicationDeps } from './publication-service.ts';
import { createPublicationsRepository } from './publications-repository.ts';

/**
 * Dependencies built from a function's environment, one factory per use; each reads only the variables its
 * functions are given, so a missing one fails at cold start. Handlers get their dependencies only from wiring.
 */
export function publicationsFromEnv() {
  return createPublicationsRepository(dynamo, requireEnv(TABLE_ENV.publications));
}

/** What the read routes need: the publications and a clock. */
export function publicationReadsFromEnv(): PublicationDeps {
  return { publications: publicationsFromEnv(), now: Date.now };
}

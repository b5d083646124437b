import { dynamo } from '#shared/clients/dynamodb.ts';
import { requireEnv } from '#shared/config.ts';
import { TABLE_ENV } from '#shared/resources.ts';
import { createPublicationsRepository } from './publications-repository.ts';

export function publicationsFromEnv() {
  return createPublicationsRepository(dynamo, requireEnv(TABLE_ENV.publications));
}

import {
  paginateQuery,
  paginateScan,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type ScanCommandInput,
} from '@aws-sdk/lib-dynamodb';

export type StoredItem = Record<string, unknown>;

/**
 * The pages of a Query or a Scan, in order. DynamoDB answers at most 1 MB (or `Limit` items) a call and names where to
 * go on (`LastEvaluatedKey`); every listing follows it through here, and one that needs only so many items stops
 * reading when it has them (leaving a `for await` loop stops the pages: no call is made for the next one).
 */
export async function* storedPages<T = StoredItem>(
  client: DynamoDBDocumentClient,
  request: { query: QueryCommandInput } | { scan: ScanCommandInput },
): AsyncGenerator<T[]> {
  const pages = 'query' in request ? paginateQuery({ client }, request.query) : paginateScan({ client }, request.scan);
  // The items are as the caller's table stores them: it names their type.
  for await (const page of pages) yield (page.Items ?? []) as T[];
}

/** Every item a Query or a Scan answers, all pages read. */
export async function allStoredItems<T = StoredItem>(
  client: DynamoDBDocumentClient,
  request: { query: QueryCommandInput } | { scan: ScanCommandInput },
): Promise<T[]> {
  const items: T[] = [];
  for await (const page of storedPages<T>(client, request)) items.push(...page);
  return items;
}

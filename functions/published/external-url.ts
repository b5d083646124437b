/** The published API's poll and resume URLs are built as every API's URLs are: from where the caller stands. */
export { externalPrefix, externalUrl } from '#shared/http/external-url.ts';

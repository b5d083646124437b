/**
 * The SDK clients, one module per service under `clients/`: import from there (`clients/dynamodb.ts`,
 * `clients/s3.ts`, `clients/sfn.ts`, `clients/bedrock.ts`). Each client is created in a pure call, so even
 * this re-export costs a bundle only the clients it uses; it stays for code written before the split.
 */
export { dynamo } from './clients/dynamodb.ts';
export { s3 } from './clients/s3.ts';
export { sfn } from './clients/sfn.ts';

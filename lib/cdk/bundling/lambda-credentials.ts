/**
 * What `@aws-sdk/credential-provider-node` means inside a Lambda bundle (esbuild `--alias`, see
 * handler-function.ts): the default chain's first link only. Lambda puts the function role's credentials in
 * the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) before the module loads, so the
 * chain never reaches its other links (SSO, shared ini files, credential_process, web identity, container and
 * instance metadata), which bundle STS and SSO clients of their own: about 110 KB per function. Without those
 * variables every call fails with the SDK's "Unable to find environment variable credentials".
 * The local twin and the tests use the real chain.
 */
import { fromEnv, type FromEnvInit } from '@aws-sdk/credential-provider-env';

export const defaultProvider = (init: FromEnvInit = {}) => fromEnv(init);

/** The same rule the real chain uses: credentials with an expiry are refreshed five minutes early. */
export const credentialsWillNeedRefresh = (credentials?: { expiration?: Date }) => credentials?.expiration !== undefined;
export const credentialsTreatedAsExpired = (credentials?: { expiration?: Date }) =>
  credentials?.expiration !== undefined && credentials.expiration.getTime() - Date.now() < 300_000;

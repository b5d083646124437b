/**
 * What `semver` means inside a Lambda bundle (esbuild `--alias`, see handler-function.ts). The X-Ray SDK that
 * Powertools Tracer loads, and its cls-hooked, call only `semver.gte(version, 'x.y.z')` (Node and AWS SDK v2
 * versions), but `require('semver')` bundles the whole library, about 29 KB. Compares numeric
 * major.minor.patch; a prerelease counts as its release.
 */
export function gte(version: string, minimum: string): boolean {
  const a = numbers(version);
  const b = numbers(minimum);
  for (let i = 0; i < 3; i += 1) {
    if (a[i]! !== b[i]!) return a[i]! > b[i]!;
  }
  return true;
}

function numbers(version: string): number[] {
  const [major = 0, minor = 0, patch = 0] = version
    .replace(/^v/, '')
    .split('-')[0]!
    .split('.')
    .map((part) => Number.parseInt(part, 10) || 0);
  return [major, minor, patch];
}

export default { gte };

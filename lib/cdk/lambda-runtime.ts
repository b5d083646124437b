import { Runtime } from 'aws-cdk-lib/aws-lambda';

/**
 * The runtime every function has on Lambda. The twin, the tests and the tools run on the same Node.js major: npm
 * installs it (package.json's `node`) and puts it first on the PATH of every script; test/unit/lambda-runtime.test.ts
 * holds package.json, the bundles and the Node.js the tests run on to this one constant.
 */
export const LAMBDA_RUNTIME = Runtime.NODEJS_24_X;

/** The Node.js major version of the runtime, from its name (`nodejs24.x`). */
export const LAMBDA_NODE_MAJOR = nodeMajorOf(LAMBDA_RUNTIME.name);

/** What esbuild compiles the bundles for: the syntax that runtime understands, nothing lowered. */
export const LAMBDA_ESBUILD_TARGET = `node${LAMBDA_NODE_MAJOR}`;

function nodeMajorOf(runtimeName: string): number {
  const match = /^nodejs(\d+)\.x$/.exec(runtimeName);
  if (!match) throw new Error(`Lambda runtime ${runtimeName} is not a Node.js runtime`);
  return Number(match[1]);
}

/**
 * Why a process on Node.js `version` is not on Lambda's Node.js, or undefined when it is. The twin's functions run in
 * its process, so another major would test code on a runtime that AWS does not run it on.
 */
export function lambdaNodeMismatch(version: string = process.versions.node): string | undefined {
  const major = Number(version.split('.')[0]);
  if (major === LAMBDA_NODE_MAJOR) return undefined;
  return (
    `This is Node.js ${version}; the functions run on Node.js ${LAMBDA_NODE_MAJOR} on Lambda (${LAMBDA_RUNTIME.name}). ` +
    `Run it through npm (npm start, npm run admin, npm test), which puts the Node.js that npm ci installed first on the PATH.`
  );
}

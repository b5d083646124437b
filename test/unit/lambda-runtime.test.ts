import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LAMBDA_ESBUILD_TARGET, LAMBDA_NODE_MAJOR, LAMBDA_RUNTIME, lambdaNodeMismatch } from '#lib/cdk/lambda-runtime.ts';
import { REPOSITORY_ROOT as ROOT, repositoryFiles } from '../support/repository-files.ts';

/**
 * One Node.js major for the functions on Lambda and for everything that runs them here: the twin hosts the functions in
 * its own process, so the Node.js the tests run on is the one the twin's functions run on.
 */
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: Record<string, string>;
  devDependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
  allowScripts: Record<string, boolean>;
};
const majorOf = (version: string) => Number(version.split('.')[0]);
const SOURCES = repositoryFiles(['bin', 'lib', 'functions', 'test'], /\.(?:[cm]?[jt]s)$/);
const sourcesMatching = (pattern: RegExp) => SOURCES.filter((file) => pattern.test(readFileSync(join(ROOT, file), 'utf8')));

describe("Lambda's Node.js, here too", () => {
  // Lambda names its Node.js runtimes nodejs<major>.x: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html
  it('takes the major version from the runtime the stack gives every function', () => {
    expect(LAMBDA_RUNTIME.name).toBe(`nodejs${LAMBDA_NODE_MAJOR}.x`);
    expect(LAMBDA_NODE_MAJOR).toBeGreaterThanOrEqual(24);
    expect(sourcesMatching(/Runtime\.NODEJS_\d/)).toEqual(['lib/cdk/lambda-runtime.ts']);
  });

  it('runs the tests, and with them the twin and its functions, on that major', () => {
    expect(majorOf(process.versions.node)).toBe(LAMBDA_NODE_MAJOR);
  });

  it('has npm install that Node.js, at an exact version, with the install script that fetches its binary', () => {
    expect(PACKAGE.optionalDependencies.node).toMatch(/^\d+\.\d+\.\d+$/);
    expect(majorOf(PACKAGE.optionalDependencies.node!)).toBe(LAMBDA_NODE_MAJOR);
    expect(PACKAGE.allowScripts.node).toBe(true);
    expect(PACKAGE.engines.node).toBe(`${LAMBDA_NODE_MAJOR}.x`);
    expect(majorOf(PACKAGE.devDependencies['@types/node']!)).toBe(LAMBDA_NODE_MAJOR);
  });

  it('bundles for that major, and names no other esbuild target', () => {
    expect(LAMBDA_ESBUILD_TARGET).toBe(`node${LAMBDA_NODE_MAJOR}`);
    expect(sourcesMatching(/target:\s*LAMBDA_ESBUILD_TARGET/)).toEqual(['lib/cdk/bundling/bundle.ts']);
    expect(sourcesMatching(/target:\s*['"`]node\d/)).toEqual([]);
  });

  it('lets a process on that major start the twin and names both versions to one on another', () => {
    expect(lambdaNodeMismatch(`${LAMBDA_NODE_MAJOR}.0.0`)).toBeUndefined();
    expect(lambdaNodeMismatch(`${LAMBDA_NODE_MAJOR}.21.3`)).toBeUndefined();
    const older = lambdaNodeMismatch('20.20.2');
    expect(older).toContain('Node.js 20.20.2');
    expect(older).toContain(`Node.js ${LAMBDA_NODE_MAJOR} on Lambda (${LAMBDA_RUNTIME.name})`);
    expect(lambdaNodeMismatch(`${LAMBDA_NODE_MAJOR + 2}.1.0`)).toContain(`Node.js ${LAMBDA_NODE_MAJOR + 2}.1.0`);
  });
});

import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { taskFunctions } from '#functions/task-functions.ts';
import { COLLECT_BATCH_MEMORY_MB } from '#shared/limits.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';

/**
 * The memory size a task function is deployed with is the one the twin holds it to (both read the task table), so a
 * collection that fits on the twin fits on Lambda. Skips bundling: the template is what matters here.
 */
let stack: PlatformStack;
let template: Template;
beforeAll(() => {
  stack = new PlatformStack(new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } }), 'Test', {
    env: { region: 'us-east-1' },
  });
  template = Template.fromStack(stack);
});

const memorySizeOf = (functionId: string) => {
  const fn = stack.engine.functions[functionId] ?? stack.collection.functions[functionId]!;
  const logicalId = stack.getLogicalId(fn.node.defaultChild as never);
  return (template.toJSON() as { Resources: Record<string, { Properties: { MemorySize?: number } }> }).Resources[logicalId]!.Properties
    .MemorySize;
};

describe('task function memory sizes', () => {
  it('deploys CollectBatch with the memory size measured for eight large recordings at once', () => {
    expect(taskFunctions.find((task) => task.id === 'CollectBatch')?.memorySize).toBe(COLLECT_BATCH_MEMORY_MB);
    expect(memorySizeOf('CollectBatch')).toBe(COLLECT_BATCH_MEMORY_MB);
  });

  it('deploys every task function with the memory size of its entry, 256 MB where it names none', () => {
    for (const task of taskFunctions) expect([task.id, memorySizeOf(task.id)]).toEqual([task.id, task.memorySize ?? 256]);
  });
});

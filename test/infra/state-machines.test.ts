import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { routeFunctions } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { STATE_MACHINE_ACTIONS, STATE_MACHINE_ENVS, STATE_MACHINE_NAMES, type StateMachineName } from '#shared/resources.ts';
import { tasksOf } from '#lib/cdk/constructs/task-function.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';

/** Workflow runs and collection sweeps on two state machines: each machine's IAM, alarms and reconciler see only its own executions. */
const templateApp = () => new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } });

let stack: PlatformStack;
let template: Template;
beforeAll(() => {
  stack = new PlatformStack(templateApp(), 'Test', { env: { region: 'us-east-1' } });
  template = Template.fromStack(stack);
});

const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const ownerOf = (machine: StateMachineName) => (machine === 'workflow' ? stack.engine : stack.collection);
const functionOf = (id: string) => (stack.api.functions[id] ?? stack.engine.functions[id] ?? stack.collection.functions[id])!;
const asl = (machine: StateMachineName) =>
  JSON.parse(readFileSync(new URL(`../../statemachines/${machine}.asl.json`, import.meta.url), 'utf8')) as {
    States: Record<string, unknown>;
  };

interface Statement {
  Action: string | string[];
  Resource: unknown;
}
const statementsOf = (id: string) => {
  const roleId = stack.getLogicalId(functionOf(id).role!.node.defaultChild as never);
  return Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap(
    (policy) => policy.Properties.PolicyDocument.Statement as Statement[],
  );
};
const environmentOf = (id: string): Record<string, unknown> =>
  template.findResources('AWS::Lambda::Function')[idOf(functionOf(id))]!.Properties.Environment.Variables;

describe('two state machines', () => {
  it('deploys a Standard state machine per ASL file, each logging its errors to a log group of its own', () => {
    const machines = template.findResources('AWS::StepFunctions::StateMachine');
    expect(Object.keys(machines).sort()).toEqual(STATE_MACHINE_NAMES.map((machine) => idOf(ownerOf(machine).stateMachine)).sort());
    const logGroups = template.findResources('AWS::Logs::LogGroup');
    for (const machine of STATE_MACHINE_NAMES) {
      const properties = machines[idOf(ownerOf(machine).stateMachine)]!.Properties;
      expect(properties, machine).toMatchObject({
        StateMachineType: 'STANDARD',
        TracingConfiguration: { Enabled: true },
        LoggingConfiguration: { Level: 'ERROR', IncludeExecutionData: false },
      });
      const logGroupId = (
        properties.LoggingConfiguration.Destinations[0].CloudWatchLogsLogGroup.LogGroupArn as { 'Fn::GetAtt': [string, string] }
      )['Fn::GetAtt'][0];
      expect(JSON.stringify(logGroups[logGroupId]!.Properties.LogGroupName), machine).toContain(
        `"/aws/vendedlogs/states/Test-${machine}-"`,
      );
    }
  });

  it('keeps the collection out of the workflow definition, and the workflow out of the collection definition', () => {
    expect(Object.keys(asl('workflow').States)).not.toContain('CollectBatch');
    expect(Object.keys(asl('workflow').States)).not.toContain('CollectMore');
    expect(JSON.stringify(asl('workflow'))).not.toContain('"collect"');
    expect(Object.keys(asl('collection').States).sort()).toEqual(['CollectBatch', 'CollectMore', 'Done']);
    const deployed = (machine: StateMachineName) =>
      template.findResources('AWS::StepFunctions::StateMachine')[idOf(ownerOf(machine).stateMachine)]!.Properties;
    expect(deployed('workflow').DefinitionString).not.toContain('CollectBatch');
    expect(Object.keys(deployed('workflow').DefinitionSubstitutions)).not.toContain('CollectBatchFunctionArn');
    expect(Object.keys(deployed('collection').DefinitionSubstitutions).sort()).toEqual(['CollectBatchFunctionArn', 'Partition']);
  });

  it("lets the collection's role invoke CollectBatch and nothing else", () => {
    const roleId = stack.getLogicalId(stack.collection.stateMachine.role.node.defaultChild as never);
    const statements = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap(
      (policy) => policy.Properties.PolicyDocument.Statement as Statement[],
    );
    const invoke = statements.filter((statement) => [statement.Action].flat().includes('lambda:InvokeFunction'));
    expect(invoke).toHaveLength(1);
    const invoked = JSON.stringify(invoke[0]!.Resource);
    expect(invoked).toContain(idOf(stack.collection.functions.CollectBatch!));
    const functions = Object.keys(template.findResources('AWS::Lambda::Function')).filter(
      (id) => id !== idOf(stack.collection.functions.CollectBatch!),
    );
    for (const other of functions) expect(invoked, other).not.toContain(`"${other}"`);
  });

  it('names the collection state machine in an output, for the admin CLI', () => {
    template.hasOutput('CollectionStateMachineArn', { Value: { Ref: idOf(stack.collection.stateMachine) } });
    template.hasOutput('WorkflowStateMachineArn', { Value: { Ref: idOf(stack.engine.stateMachine) } });
  });
});

describe('state machine access, from each function’s declaration', () => {
  const entries = [...routeFunctions(), ...taskFunctions];

  it.each(entries.map((entry) => [entry.id, entry] as const))(
    '%s may use exactly the state machines and actions it declares',
    (id, entry) => {
      const granted: Partial<Record<StateMachineName, string[]>> = {};
      for (const statement of statementsOf(id)) {
        const actions = [statement.Action].flat().filter((action) => action.startsWith('states:'));
        if (actions.length === 0) continue;
        const machines = STATE_MACHINE_NAMES.filter((machine) =>
          JSON.stringify(statement.Resource).includes(`"${idOf(ownerOf(machine).stateMachine)}"`),
        );
        expect(machines, `${id}: ${JSON.stringify(statement)}`).toHaveLength(1);
        (granted[machines[0]!] ??= []).push(...actions);
      }
      const declared = Object.fromEntries(
        Object.entries(entry.stateMachines ?? {}).map(([machine, access]) => [
          machine,
          access.flatMap((each) => STATE_MACHINE_ACTIONS[each]),
        ]),
      );
      expect(Object.fromEntries(Object.entries(granted).map(([machine, actions]) => [machine, [...new Set(actions)].sort()]))).toEqual(
        Object.fromEntries(Object.entries(declared).map(([machine, actions]) => [machine, [...actions].sort()])),
      );
      const variables = environmentOf(id);
      for (const machine of STATE_MACHINE_NAMES) {
        const expected = entry.stateMachines?.[machine] ? { Ref: idOf(ownerOf(machine).stateMachine) } : undefined;
        expect(variables[STATE_MACHINE_ENVS[machine]], `${id} ${STATE_MACHINE_ENVS[machine]}`).toEqual(expected);
      }
    },
  );

  it('lets the nightly trigger start collection sweeps only, and no step or API function start one', () => {
    expect(taskFunctions.find((task) => task.id === 'CollectionNightly')!.stateMachines).toEqual({ collection: ['start'] });
    const mayTouchCollection = entries.filter((entry) => entry.stateMachines?.collection).map((entry) => entry.id);
    expect(mayTouchCollection).toEqual(['CollectionNightly']);
  });

  it('refuses a task granted access to its own state machine, which would name it back', () => {
    const collectBatch = taskFunctions.find((task) => task.id === 'CollectBatch')!;
    expect(() => tasksOf([{ ...collectBatch, stateMachines: { collection: ['start'] } }], 'collection')).toThrow(
      /CollectBatch is a task of the collection state machine/,
    );
  });
});

describe('the hand-off bus', () => {
  it('keeps the name and logical id it had under the workflow engine, which consumers and CloudFormation know it by', () => {
    // Recorded from the stack as deployed before the collection had its own construct (stack id `Test`).
    const buses = template.findResources('AWS::Events::EventBus');
    expect(Object.keys(buses)).toEqual(['EngineHandoffBusBC667592']);
    expect(buses.EngineHandoffBusBC667592!.Properties.Name).toBe('TestEngineHandoffBusE3737C6D');
    expect(environmentOf('CollectBatch').HANDOFF_BUS_NAME).toEqual({ Ref: 'EngineHandoffBusBC667592' });
  });
});

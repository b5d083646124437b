import type { InitializeHandler, InitializeHandlerArguments, InitializeHandlerOutput, InitializeMiddleware } from '@smithy/types';
import { recordCost, type CostUnits } from '../metering/cost-meter.ts';

/** The part of an SDK v3 client that metering needs, so this module imports no client package. */
export interface MeterableClient {
  middlewareStack: { add(middleware: InitializeMiddleware<object, object>, options: { step: 'initialize'; name: string }): void };
}

export interface MeteredCall {
  readonly commandName: string;
  /** The command input before serialization: a meter may still add fields (ReturnConsumedCapacity). */
  readonly input: Record<string, unknown>;
  readonly proceed: () => Promise<InitializeHandlerOutput<object>>;
}

/**
 * Runs `meter` around every call of `client` and returns the client. Client modules create their client in
 * a function called as `export const x = /* @__PURE__ *\/ createX()`: a bundle that imports the module but
 * never uses `x` then drops the client and its SDK package (which declares itself free of side effects).
 */
export function metered<Client extends MeterableClient>(
  client: Client,
  meter: (call: MeteredCall) => Promise<InitializeHandlerOutput<object>>,
): Client {
  client.middlewareStack.add(
    (next: InitializeHandler<object, object>, context) => (args: InitializeHandlerArguments<object>) =>
      meter({ commandName: context.commandName ?? '', input: args.input as Record<string, unknown>, proceed: () => next(args) }),
    { step: 'initialize', name: 'costMeter' },
  );
  return client;
}

/** For services that bill each API call as one request of a kind. */
export function meteredPerRequest<Client extends MeterableClient>(
  client: Client,
  units: (commandName: string) => Partial<CostUnits>,
): Client {
  return metered(client, (call) => {
    recordCost(units(call.commandName));
    return call.proceed();
  });
}

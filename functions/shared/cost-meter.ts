import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Counts the pay-per-request units one request spends, so finance can see them per request in metrics.
 * AsyncLocalStorage keeps concurrent requests apart on the local server, where one process serves them all.
 */
export interface CostUnits {
  dynamoReadUnits: number;
  dynamoWriteUnits: number;
  s3WriteRequests: number;
  s3ReadRequests: number;
  /** Step Functions API calls (start, stop, task responses); state transitions are counted by the state machine's own metrics. */
  stepFunctionsRequests: number;
}

const storage = new AsyncLocalStorage<CostUnits>();

export function emptyCostUnits(): CostUnits {
  return { dynamoReadUnits: 0, dynamoWriteUnits: 0, s3WriteRequests: 0, s3ReadRequests: 0, stepFunctionsRequests: 0 };
}

export function runMetered<T>(units: CostUnits, work: () => Promise<T>): Promise<T> {
  return storage.run(units, work);
}

export function recordCost(change: Partial<CostUnits>): void {
  const units = storage.getStore();
  if (!units) return;
  for (const [key, value] of Object.entries(change) as [keyof CostUnits, number][]) {
    units[key] += value;
  }
}

type CostListener = (operation: string, units: CostUnits) => void;
const listeners = new Set<CostListener>();

/** Lets an in-process observer (the benchmark) see each request's units; metrics remain the production channel. */
export function onRequestCost(listener: CostListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function reportRequestCost(operation: string, units: CostUnits): void {
  for (const listener of listeners) listener(operation, units);
}

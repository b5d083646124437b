import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { CostUnits } from './cost-meter.ts';

/** One Logger, Metrics and Tracer per process; service name and namespace come from POWERTOOLS_* variables. */
export const logger = new Logger();
export const metrics = new Metrics();
export const tracer = new Tracer();

/** Publishes what the request cost, in the units AWS bills, next to the business metrics. */
export function publishCostUnits(units: CostUnits): void {
  metrics.addMetric('DynamoDBReadUnits', MetricUnit.Count, units.dynamoReadUnits);
  metrics.addMetric('DynamoDBWriteUnits', MetricUnit.Count, units.dynamoWriteUnits);
  metrics.addMetric('S3WriteRequests', MetricUnit.Count, units.s3WriteRequests);
  metrics.addMetric('S3ReadRequests', MetricUnit.Count, units.s3ReadRequests);
  if (units.stepFunctionsRequests > 0) metrics.addMetric('StepFunctionsRequests', MetricUnit.Count, units.stepFunctionsRequests);
}

export { MetricUnit };

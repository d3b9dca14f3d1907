import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME, ATTR_SERVICE_NAMESPACE } from '@opentelemetry/semantic-conventions';
import { Telemetry } from '../../ports/telemetry';
import { OtelMetrics } from './otel-metrics';

// Incubating conventions: the package's `incubating` entry asks to be copied rather than imported (its names may still change).
const ATTR_FAAS_NAME = 'faas.name';
const ATTR_FAAS_VERSION = 'faas.version';

/** What names the process that writes the metrics. */
export interface ProcessIdentity {
  /** The deployment, one of several in a project (HERALD_TOPIC_PREFIX). */
  deployment: string;
  /** The function (K_SERVICE / FUNCTION_TARGET), or `local` for local mode. */
  function: string;
  /** Its revision (K_REVISION), when deployed. */
  revision?: string;
  /** This process, so that two instances never write the same time series. */
  instance: string;
}

/**
 * The resource every metric carries: service `herald`, the function and revision (as the
 * FaaS conventions name them) and the instance. The Cloud Monitoring exporter maps service
 * name, namespace and instance id to a `generic_task` (job, namespace, task_id): one series
 * per instance, never two instances adding into one.
 */
export function heraldResource(who: ProcessIdentity) {
  return resourceFromAttributes({
    [ATTR_SERVICE_NAME]: 'herald',
    [ATTR_SERVICE_NAMESPACE]: who.deployment,
    [ATTR_SERVICE_INSTANCE_ID]: who.instance,
    [ATTR_FAAS_NAME]: who.function,
    ...(who.revision !== undefined ? { [ATTR_FAAS_VERSION]: who.revision } : {}),
  });
}

/** Telemetry on one MeterProvider read by `readers` (each reader: one way out). */
export function otelTelemetry(who: ProcessIdentity, readers: MetricReader[]): Telemetry {
  const provider = new MeterProvider({ resource: heraldResource(who), readers });
  let stopped: Promise<void> | undefined;
  return {
    metrics: new OtelMetrics(provider.getMeter('herald')),
    flush: () => provider.forceFlush(),
    shutdown: () => (stopped ??= provider.shutdown()),
  };
}

import { Telemetry } from '../../ports/telemetry';
import { HealthReader, HealthReading } from '../../ports/health';

/** HERALD_TELEMETRY=off: every call records nothing, and no OpenTelemetry module is loaded. */
export const NO_TELEMETRY: Telemetry = {
  metrics: { add: () => undefined, record: () => undefined },
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

/** No numbers to show, and `reason`: why, and how to have them (the Overview panel says it). */
export function noHealth(reason: string): HealthReader {
  const reading: HealthReading = { source: 'none', acceptedPerSecond: null, deliveredPerSecond: null, endToEndP99Ms: null, deadLettered: null, lanesOldestBacklogSeconds: null, reason };
  return { read: () => Promise.resolve(reading) };
}

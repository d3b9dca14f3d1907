import { Telemetry } from '../../ports/telemetry';

/** HERALD_TELEMETRY=off: every call records nothing, and no OpenTelemetry module is loaded. */
export const NO_TELEMETRY: Telemetry = {
  metrics: { add: () => undefined, record: () => undefined },
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

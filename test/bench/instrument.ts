import { performance } from 'node:perf_hooks';
import { Runtime } from '../../shared/runtime/runtime';
import { lanePrefixes } from '../../shared/topology';
import { Logger, LogFields } from '../../shared/ports/clock';
import { distribution, Distribution } from './stats';

/** Durations and peak concurrency of one kind of call Herald makes. */
class Timing {
  readonly durations: number[] = [];
  inFlight = 0;
  peakInFlight = 0;
  /** performance.now() at the first start and the last end since the last reset. */
  firstStart?: number;
  lastEnd?: number;

  async time<T>(call: () => Promise<T>): Promise<T> {
    const began = performance.now();
    this.firstStart ??= began;
    this.inFlight++;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    try {
      return await call();
    } finally {
      this.inFlight--;
      this.lastEnd = performance.now();
      this.durations.push(this.lastEnd - began);
    }
  }

  reset(): void {
    this.durations.length = 0;
    this.peakInFlight = this.inFlight;
    this.firstStart = undefined;
    this.lastEnd = undefined;
  }

  summary(): Distribution & { peakInFlight: number } {
    return { ...distribution(this.durations), peakInFlight: this.peakInFlight };
  }
}

export const PROBED_CALLS = [
  'publish events topic',
  'publish lane (ingest, route)',
  'publish other',
  'directory.matching (route)',
  'deliveries.get',
  'deliveries.create',
  'http.send (to receiver)',
] as const;
export type ProbedCall = (typeof PROBED_CALLS)[number];

/**
 * Times the calls Herald's functions make through the runtime, without touching Herald's
 * code: the functions read `runtime()` on every request, so wrapping the methods of the
 * shared runtime object after start-up sees every call.
 */
export class RuntimeProbe {
  readonly timings = new Map<ProbedCall, Timing>(PROBED_CALLS.map((c) => [c, new Timing()]));

  constructor(runtime: Runtime) {
    const t = (c: ProbedCall) => this.timings.get(c)!;
    const { bus, deliveries, directory, http, topology } = runtime;
    const eventsTopic = topology.topics.events.name;
    const lanes = lanePrefixes(runtime.names);
    const publish = bus.publish.bind(bus);
    bus.publish = (topic, message) =>
      t(topic === eventsTopic ? 'publish events topic' : lanes.some((prefix) => topic.startsWith(prefix)) ? 'publish lane (ingest, route)' : 'publish other').time(() => publish(topic, message));
    const get = deliveries.get.bind(deliveries);
    deliveries.get = (id) => t('deliveries.get').time(() => get(id));
    const create = deliveries.create.bind(deliveries);
    deliveries.create = (record) => t('deliveries.create').time(() => create(record));
    const matching = directory.matching.bind(directory);
    directory.matching = (type) => t('directory.matching (route)').time(() => matching(type));
    const send = http.send.bind(http);
    http.send = (request) => t('http.send (to receiver)').time(() => send(request));
  }

  reset(): void {
    for (const timing of this.timings.values()) timing.reset();
  }

  count(call: ProbedCall): number {
    return this.timings.get(call)!.durations.length;
  }

  /** When the last call of a kind ended (performance.now()), if any did since the reset. */
  lastEnd(call: ProbedCall): number | undefined {
    return this.timings.get(call)!.lastEnd;
  }

  summary(): Record<ProbedCall, Distribution & { peakInFlight: number }> {
    return Object.fromEntries([...this.timings].map(([c, timing]) => [c, timing.summary()])) as Record<ProbedCall, Distribution & { peakInFlight: number }>;
  }
}

/** Discards Herald's logs but counts them, and keeps the first few warnings and errors to show. */
export class CountingLogger implements Logger {
  readonly counts = { DEBUG: 0, INFO: 0, WARNING: 0, ERROR: 0 };
  readonly problems: string[] = [];

  debug = (_message: string, _fields?: LogFields): void => void this.counts.DEBUG++;
  info = (_message: string, _fields?: LogFields): void => void this.counts.INFO++;
  warn = (message: string, fields?: LogFields): void => this.keep('WARNING', message, fields);
  error = (message: string, fields?: LogFields): void => this.keep('ERROR', message, fields);

  private keep(severity: 'WARNING' | 'ERROR', message: string, fields: LogFields = {}): void {
    this.counts[severity]++;
    if (this.problems.length < 5) this.problems.push(`${severity} ${message} ${JSON.stringify(fields).slice(0, 300)}`);
  }
}

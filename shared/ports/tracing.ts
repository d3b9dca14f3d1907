import type { TraceCarrier } from '../domain/events/trace-context';

export type { TraceCarrier };

/**
 * Spans as the app starts them, in words of its own: no OpenTelemetry type crosses this port
 * (shared/adapters/otel/otel-tracing.ts implements it; NO_TRACING does nothing). Names come from
 * the catalogue (shared/telemetry-catalogue.ts SPANS).
 */

export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanOptions {
  kind?: SpanKind;
  /**
   * The span's parent: a carried context (an event's traceparent, a producer's header) continued,
   * `null` a new trace, absent the span active now (none: a new trace).
   */
  parent?: TraceCarrier | null;
  attributes?: SpanAttributes;
  /** Other traces the work belongs to (a batch's members'): linked, not parents. */
  links?: readonly TraceCarrier[];
  /** When the work began, if before the span could be started (a request parsed first to find its parent). */
  startTime?: Date;
}

/** The span a piece of work runs in. */
export interface WorkSpan {
  /** Whether it is recorded and exported (sampling decides). */
  readonly sampled: boolean;
  /** Its context as W3C text, to carry on (undefined: tracing is off). */
  readonly carrier: TraceCarrier | undefined;
  set(attributes: SpanAttributes): void;
  /** Something that happened during it (a span event). */
  event(name: string, attributes?: SpanAttributes): void;
  /** Marks it failed, with why. */
  fail(message: string): void;
}

export interface Tracing {
  /** Runs `work` in a new span, active for everything it calls; the span ends when `work` settles (failed if it rejects). */
  inSpan<T>(name: string, options: SpanOptions, work: (span: WorkSpan) => Promise<T>): Promise<T>;
  /** The active span's context, to inject into an outgoing request or message. */
  activeCarrier(): TraceCarrier | undefined;
  /**
   * Records, whatever the sampling, a failure on the trace of the active span: as an event on
   * it when it is sampled, else as a span of its own (`name`) forced into the sample, with the event.
   */
  keepFailure(name: string, attributes: SpanAttributes): void;
  /** Cloud Logging's fields for a line written under the active span (none when no span is). */
  logFields(): Record<string, string | boolean>;
  /** Exports what is ended and not yet exported. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const NO_SPAN: WorkSpan = { sampled: false, carrier: undefined, set: () => undefined, event: () => undefined, fail: () => undefined };

/** Tracing off (HERALD_TELEMETRY=off, or no exporter configured): work runs as it is, and no OpenTelemetry module is loaded. */
export const NO_TRACING: Tracing = {
  inSpan: (_name, _options, work) => work(NO_SPAN),
  activeCarrier: () => undefined,
  keepFailure: () => undefined,
  logFields: () => ({}),
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

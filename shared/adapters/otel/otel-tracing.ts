import { Context, context, isSpanContextValid, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace, TraceFlags, Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, ParentBasedSampler, SpanProcessor, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { SpanAttributes, SpanOptions, TraceCarrier, Tracing, WorkSpan } from '../../ports/tracing';

const KINDS: Record<NonNullable<SpanOptions['kind']>, SpanKind> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

export interface OtelTracingSettings {
  /** Cloud Logging's trace field names the project: `projects/<projectId>/traces/<traceId>`. */
  projectId: string;
  /** Of the traces Herald starts itself, the share sampled (0-1); one continued follows its parent's decision. */
  sampleRatio: number;
  /** Resource attributes: service, deployment, function, instance. */
  resource: Record<string, string>;
  /** Where ended spans go (one processor per exporter). */
  processors: SpanProcessor[];
}

const propagator = new W3CTraceContextPropagator();
const carrierGetter = {
  get: (c: TraceCarrier, key: string) => (key === 'traceparent' ? c.traceparent : key === 'tracestate' ? c.tracestate : undefined),
  keys: (c: TraceCarrier) => Object.keys(c),
};
const carrierSetter = { set: (c: Record<string, string>, key: string, value: string) => void (c[key] = value) };

let contextManagerSet = false;

/**
 * Tracing with the OpenTelemetry SDK: parent-based sampling (a producer's decision is kept; a
 * trace Herald starts is sampled at `sampleRatio`), context in an AsyncLocalStorage so a span
 * started in a handler is the parent of whatever it awaits, and W3C Trace Context text in and out.
 * A span not sampled still has its ids: an event's traceparent names its trace either way.
 */
export class OtelTracing implements Tracing {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private stopped: Promise<void> | undefined;

  constructor(private readonly settings: OtelTracingSettings) {
    if (!contextManagerSet) {
      // One per process (the API keeps the first): every tracing made later shares it.
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      contextManagerSet = true;
    }
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes(settings.resource),
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
      spanProcessors: settings.processors,
    });
    this.tracer = this.provider.getTracer('herald');
  }

  async inSpan<T>(name: string, options: SpanOptions, work: (span: WorkSpan) => Promise<T>): Promise<T> {
    const parent = options.parent === undefined ? context.active() : options.parent === null ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, options.parent, carrierGetter);
    const links = (options.links ?? []).flatMap((c) => {
      const linked = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, c, carrierGetter));
      return linked && isSpanContextValid(linked) ? [{ context: linked }] : [];
    });
    const span = this.tracer.startSpan(name, { kind: KINDS[options.kind ?? 'internal'], attributes: defined(options.attributes), links, ...(options.startTime ? { startTime: options.startTime } : {}) }, parent);
    const active = trace.setSpan(parent, span);
    return context.with(active, async () => {
      try {
        return await work(workSpan(span, active));
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
        throw e;
      } finally {
        span.end();
      }
    });
  }

  activeCarrier(): TraceCarrier | undefined {
    return carrierOf(context.active());
  }

  keepFailure(name: string, attributes: SpanAttributes): void {
    const span = trace.getSpan(context.active());
    if (!span || !isSpanContextValid(span.spanContext())) return;
    if (span.isRecording()) {
      span.addEvent(name, defined(attributes));
      return;
    }
    // Not sampled: a span of its own in the same trace, sampled whatever the ratio (its parent is marked sampled, and the sampler follows a parent).
    const forced = trace.setSpanContext(ROOT_CONTEXT, { ...span.spanContext(), traceFlags: TraceFlags.SAMPLED });
    const kept = this.tracer.startSpan(name, { attributes: defined(attributes) }, forced);
    kept.addEvent(name, defined(attributes));
    kept.setStatus({ code: SpanStatusCode.ERROR, message: String(attributes['error.message'] ?? name) });
    kept.end();
  }

  logFields(): Record<string, string | boolean> {
    const sc = trace.getSpan(context.active())?.spanContext();
    if (!sc || !isSpanContextValid(sc)) return {};
    return {
      'logging.googleapis.com/trace': `projects/${this.settings.projectId}/traces/${sc.traceId}`,
      'logging.googleapis.com/spanId': sc.spanId,
      'logging.googleapis.com/trace_sampled': (sc.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED,
    };
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return (this.stopped ??= this.provider.shutdown());
  }
}

function workSpan(span: Span, active: Context): WorkSpan {
  return {
    sampled: span.isRecording(),
    get carrier() {
      return carrierOf(active);
    },
    set: (attributes) => void span.setAttributes(defined(attributes)),
    event: (name, attributes) => void span.addEvent(name, attributes ? defined(attributes) : undefined),
    fail: (message) => void span.setStatus({ code: SpanStatusCode.ERROR, message }),
  };
}

function carrierOf(ctx: Context): TraceCarrier | undefined {
  const out: Record<string, string> = {};
  propagator.inject(ctx, out, carrierSetter);
  return out.traceparent === undefined ? undefined : { traceparent: out.traceparent, ...(out.tracestate ? { tracestate: out.tracestate } : {}) };
}

function defined(attributes: SpanAttributes | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(attributes ?? {})) if (v !== undefined) out[k] = v;
  return out;
}

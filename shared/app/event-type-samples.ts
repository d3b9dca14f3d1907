import { structuredEvent } from '../domain/cloudevents-http';
import { HeraldEvent } from '../domain/event';
import { loneSurrogateIssues } from '../domain/json-body';
import { eventAccount } from '../domain/account';
import { Clock, EventTypeStore, Logger } from '../ports';

/** How big a sample may be (its JSON); a bigger event is kept as its attributes and an excerpt. */
export const SAMPLE_MAX_BYTES = 8 * 1024;
/** How often an instance rewrites one (account, type)'s sample at most. */
export const SAMPLE_EVERY_MS = 60_000;
/** How many (account, type) pairs an instance remembers; past it the oldest are forgotten (and may be written again early). */
const REMEMBERED = 10_000;

/**
 * The event as the console shows it: CloudEvents JSON (structured mode). Over `maxBytes` the
 * attributes stay whole and the data becomes `dataExcerpt`, its JSON cut to fit, with `truncated`.
 */
export function sampleOf(event: HeraldEvent, maxBytes = SAMPLE_MAX_BYTES): Record<string, unknown> {
  let whole = structuredEvent(event);
  // Binary-mode JSON data may spell a lone surrogate (`"\ud800"`): valid bytes, but no Firestore string can hold it decoded. The bytes, then.
  if (event.data.length > 0 && 'data' in whole && loneSurrogateIssues(whole.data, [], 1).length > 0) {
    const { data: _data, ...attributes } = whole;
    whole = { ...attributes, data_base64: event.data.toString('base64') };
  }
  const json = JSON.stringify(whole);
  if (Buffer.byteLength(json) <= maxBytes) return whole;
  const { data, data_base64: base64, ...attributes } = whole;
  const dataJson = base64 !== undefined ? String(base64) : JSON.stringify(data) ?? '';
  const room = Math.max(0, maxBytes - Buffer.byteLength(JSON.stringify(attributes)) - 64);
  // Cut by bytes; a character split at the cut becomes U+FFFD, which JSON carries as it is.
  const dataExcerpt = Buffer.from(dataJson).subarray(0, room).toString('utf8');
  return { ...attributes, truncated: true, dataExcerpt };
}

/**
 * Remembers, per (account, event type), the latest event as a sample for the console's Event
 * types page, without a Firestore write per event: each instance writes a type's sample at most
 * once per SAMPLE_EVERY_MS, in the background. Ingest never waits for it and never fails by it:
 * a failed write is logged, and the type's next event after SAMPLE_EVERY_MS tries again.
 */
export class EventTypeSampler {
  /** `${account}\n${type}` → when this instance last wrote its sample (ms). */
  private readonly written = new Map<string, number>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly store: Pick<EventTypeStore, 'put'>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: { everyMs?: number; maxBytes?: number } = {},
  ) {}

  /** Takes accepted events; writes what is due, in the background. */
  observe(events: readonly HeraldEvent[]): void {
    const now = this.clock.now();
    const everyMs = this.options.everyMs ?? SAMPLE_EVERY_MS;
    const due = new Map<string, HeraldEvent>();
    for (const event of events) {
      const key = `${eventAccount(event.attributes)}\n${event.attributes.type}`;
      const last = this.written.get(key);
      if (last !== undefined && now.getTime() - last < everyMs) continue;
      // The latest of a request's events of one type.
      due.set(key, event);
    }
    for (const [key, event] of due) {
      this.written.delete(key);
      this.written.set(key, now.getTime());
      if (this.written.size > REMEMBERED) this.written.delete(this.written.keys().next().value!);
      this.write(event, now);
    }
  }

  /** Settles when every write started so far has (tests, and a clean stop). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private write(event: HeraldEvent, now: Date): void {
    const account = eventAccount(event.attributes);
    const { type } = event.attributes;
    let written: Promise<void>;
    try {
      written = this.store.put({ account, type, lastSeenAt: now.toISOString(), sample: sampleOf(event, this.options.maxBytes) });
    } catch (e) {
      written = Promise.reject(e as Error);
    }
    const tracked = written.catch((e: unknown) => {
      this.log.warn('the event type sample could not be written (Firestore); the next event of the type tries again after a minute', { account, eventType: type, error: (e as Error).message });
    });
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }
}

import { AttemptDetail, AttemptResult, DeliveryRecord } from '../retry/delivery';
import { Decision } from '../retry/retry-decision';

/**
 * A first attempt sent whose record could not be written: everything needed to write it
 * later without sending again, and to end it as its push would have (counted, dead-lettered).
 */
export interface UnrecordedSend {
  /** The record the send made, as it was to be created. */
  record: DeliveryRecord;
  result: AttemptResult;
  decision: Decision;
  detail: AttemptDetail;
  at: Date;
  publishedAt: string;
}

export interface UnrecordedSettings {
  /** How long a send is kept: Pub/Sub brings a failed push again within seconds to minutes (backoff 10–600 s). */
  keepMs: number;
  /** Sends kept at most; past it the oldest goes (its redelivery is sent again, as before this memory). */
  maxEntries: number;
  /** Bytes kept at most, as `bytesOf` counts them: a failed send's record holds its event (up to HERALD_MAX_EVENT_BYTES). */
  maxBytes: number;
}

/** 30 minutes: several of Pub/Sub's longest push backoffs (600 s); at most 10,000 sends and 64 MiB. */
export const UNRECORDED_SENDS: UnrecordedSettings = { keepMs: 30 * 60_000, maxEntries: 10_000, maxBytes: 64 * 1024 * 1024 };

/** What a kept send costs in memory, roughly: its event's data (a failure's record keeps it) and a bound on the rest. */
const ENTRY_BYTES = 4 * 1024;
function bytesOf(send: UnrecordedSend): number {
  return ENTRY_BYTES + (send.record.event?.data.length ?? 0);
}

/**
 * The first attempts this instance sent but could not record (the store failed after the
 * send), by delivery id. The push failed so that Pub/Sub brings it again; when it comes back
 * to this instance the outcome is recorded from here without a second send, so a store outage
 * costs the destination one request per instance that sent it, not one per redelivery (up to
 * the lane's 100). Memory only, bounded (`maxEntries`, `maxBytes`, `keepMs`); a redelivery that reaches
 * another instance, or comes after the send is forgotten, is sent again. Times are ms since the
 * epoch, passed in.
 */
export class UnrecordedSends {
  private readonly entries = new Map<string, { send: UnrecordedSend; keptAt: number; bytes: number }>();
  private bytes = 0;

  constructor(private readonly settings: UnrecordedSettings = UNRECORDED_SENDS) {}

  keep(id: string, send: UnrecordedSend, now: number): void {
    this.remove(id);
    const bytes = bytesOf(send);
    this.entries.set(id, { send, keptAt: now, bytes });
    this.bytes += bytes;
    // Oldest first (kept in order): what is past keepMs, or beyond maxEntries or maxBytes, goes.
    for (const [oldest, entry] of this.entries) {
      const within = this.entries.size <= this.settings.maxEntries && this.bytes <= this.settings.maxBytes;
      if (within && now - entry.keptAt < this.settings.keepMs) break;
      this.remove(oldest);
    }
  }

  /**
   * The send kept for `id`, taken out: whoever records it owns it, so two copies of one push
   * never both end it (the one that finds nothing sends, as any redelivery would). Kept again
   * (`keep`) if recording it fails once more.
   */
  take(id: string, now: number): UnrecordedSend | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.remove(id);
    return now - entry.keptAt < this.settings.keepMs ? entry.send : undefined;
  }

  private remove(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    this.bytes -= entry.bytes;
  }

  get size(): number {
    return this.entries.size;
  }
}

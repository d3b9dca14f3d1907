/**
 * Which destinations are slow now, as one instance has seen them: an attempt that took at
 * least `slowMs` (or timed out), or one still running past it. A shared lane's push slots
 * are shared by every destination on the lane, so a slow destination's first attempts leave
 * it for the retry lanes (app/delivery/deliver.ts); the emulator keeps only two pushes in flight per
 * subscription, where a single 5 s timeout would stall its neighbours.
 *
 * A destination stays slow until one of its attempts finishes fast, or `forgetMs` after
 * the last slow one, when it is tried on its lane again. Times are ms since the epoch,
 * passed in: no clock here.
 */
export interface SlowSettings {
  slowMs: number;
  /** How long a slow verdict lasts without news. */
  forgetMs: number;
}

interface Entry {
  /** Start times of the attempts running now, by ticket. */
  running: Map<number, number>;
  slowUntil: number;
}

export class SlowDestinations {
  private readonly entries = new Map<string, Entry>();
  private nextTicket = 0;

  constructor(private readonly settings: SlowSettings) {}

  /** An attempt starts: the ticket ends it. */
  begin(destinationId: string, at: number): number {
    const entry = this.entries.get(destinationId) ?? { running: new Map<number, number>(), slowUntil: 0 };
    const ticket = this.nextTicket++;
    entry.running.set(ticket, at);
    this.entries.set(destinationId, entry);
    return ticket;
  }

  /** The attempt ended after `durationMs`; `timedOut` counts as slow whatever it took. */
  end(destinationId: string, ticket: number, at: number, durationMs: number, timedOut: boolean): void {
    const entry = this.entries.get(destinationId);
    if (!entry) return;
    entry.running.delete(ticket);
    entry.slowUntil = timedOut || durationMs >= this.settings.slowMs ? at + this.settings.forgetMs : 0;
    if (entry.running.size === 0 && entry.slowUntil === 0) this.entries.delete(destinationId);
  }

  isSlow(destinationId: string, now: number): boolean {
    const entry = this.entries.get(destinationId);
    if (!entry) return false;
    if (entry.slowUntil > now) return true;
    for (const startedAt of entry.running.values()) if (now - startedAt >= this.settings.slowMs) return true;
    if (entry.running.size === 0) this.entries.delete(destinationId);
    return false;
  }

  /** Destinations with something remembered (running attempts or a slow verdict): memory stays bounded by them. */
  get size(): number {
    return this.entries.size;
  }
}

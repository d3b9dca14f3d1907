import { randomBytes } from 'node:crypto';
import { fitsBatch, IntakeBatch, intakeBatchId } from '../domain/intake';
import { eventSize, HeraldEvent } from '../domain/event';
import { Clock, IntakeStore } from '../ports';

/** Journal writes under way at once; events that come meanwhile join the next batch. */
const MAX_WRITES_IN_FLIGHT = 4;

interface OpenBatch {
  batch: IntakeBatch;
  bytes: number;
  durable: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * Ingest's journal of accepted events, with group commit: the events of every request that
 * arrives while earlier writes are under way go out together in one document, so under load
 * the journal costs one write for many events, and a lone event costs one write and no wait
 * beyond it. Each event learns its batch id at once (it travels on the Pub/Sub message), and
 * ingest answers only once its events are durable here and on the events topic.
 */
export class IntakeJournal {
  private open: OpenBatch | undefined;
  private readonly sealed: OpenBatch[] = [];
  private writing = 0;
  private scheduled = false;

  constructor(
    private readonly store: IntakeStore,
    private readonly clock: Clock,
    private readonly random: () => string = () => randomBytes(6).toString('hex'),
  ) {}

  /** Places the events in batches: the batch id of each, and a promise that resolves once all of them are durable. */
  add(events: readonly HeraldEvent[]): { ids: string[]; durable: Promise<void> } {
    const ids: string[] = [];
    const waits = new Set<Promise<void>>();
    for (const event of events) {
      if (this.open && !fitsBatch(this.open.batch.events.length, this.open.bytes, event)) this.seal();
      this.open ??= this.newBatch();
      this.open.batch.events.push(event);
      this.open.bytes += eventSize(event);
      ids.push(this.open.batch.id);
      waits.add(this.open.durable);
    }
    this.schedule();
    return { ids, durable: Promise.all(waits).then(() => undefined) };
  }

  private newBatch(): OpenBatch {
    const now = this.clock.now();
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const durable = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Every caller awaits it; this keeps a batch nobody awaits any more from an unhandled rejection.
    durable.catch(() => undefined);
    return { batch: { id: intakeBatchId(now, this.random()), acceptedAt: now.toISOString(), events: [] }, bytes: 0, durable, resolve, reject };
  }

  private seal(): void {
    if (this.open) this.sealed.push(this.open);
    this.open = undefined;
  }

  /** Writes start on the next turn of the event loop, so that requests arriving together share one. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.writeWhatIsReady();
    });
  }

  private writeWhatIsReady(): void {
    while (this.writing < MAX_WRITES_IN_FLIGHT) {
      if (this.sealed.length === 0) this.seal();
      const next = this.sealed.shift();
      if (!next) return;
      this.writing++;
      this.store.add(next.batch).then(next.resolve, next.reject).finally(() => {
        this.writing--;
        if (this.open || this.sealed.length > 0) this.writeWhatIsReady();
      });
    }
  }
}

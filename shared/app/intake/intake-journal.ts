import { randomBytes } from 'node:crypto';
import { fitsBatch, IntakeBatch, intakeBatchId, joinsOpenBatch, openedAt } from '../../domain/intake/intake';
import { eventSize, HeraldEvent } from '../../domain/events/event';
import { Clock, Logger } from '../../ports/clock';
import { IntakeStore } from '../../ports/intake';
import { errorMessage } from '../../domain/error-message';

/**
 * At most one journal write in flight, and the next starts no sooner than this after the last
 * one started (unless a full batch waits): a busy instance writes about ten journal documents a
 * second whatever its event rate — at 100 events/s, 0.1 write per event — while a lone event
 * after a quiet spell is written at once. Under load an ingest answer waits up to this long
 * for its events to be durable; delivery does not (the publish is not held back).
 */
export const JOURNAL_WRITE_GAP_MS = 100;

/** Writes of a batch, at most, each failed one followed by a read of whether it landed. */
export const JOURNAL_WRITE_TRIES = 2;

/**
 * The journal did not record a batch: `absent`, read back and not there after every write; or
 * `unknown`, the read-back failed too (the events may be recorded).
 */
export class IntakeNotRecorded extends Error {
  constructor(
    readonly writeError: unknown,
    readonly stored: 'absent' | 'unknown',
    readonly readError?: unknown,
  ) {
    super(errorText(writeError));
    this.name = 'IntakeNotRecorded';
  }
}

function errorText(e: unknown): string {
  return errorMessage(e);
}

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
  private writing = false;
  private scheduled = false;
  /** When the last write started (performance.now()). */
  private lastWrite = -Infinity;

  constructor(
    private readonly store: IntakeStore,
    private readonly clock: Clock,
    private readonly random: () => string = () => randomBytes(6).toString('hex'),
    private readonly gapMs = JOURNAL_WRITE_GAP_MS,
    private readonly log?: Logger,
  ) {}

  /**
   * Places the events in batches: the batch id of each, and a promise that resolves once all of
   * them are durable. `newestRouted`: the latest `createdAt` of the destinations they were
   * routed to: they join no batch opened before it (domain/intake/intake.ts joinsOpenBatch), so the
   * reconciler expects each of them wherever it was sent. `refs`: per event, the batched
   * destinations whose batch lane takes it by reference (its journal batch and `places`): kept
   * in the batch (IntakeBatch.refs) for the reconciler.
   */
  add(events: readonly HeraldEvent[], newestRouted?: string, refs?: readonly (readonly string[])[]): { ids: string[]; places: number[]; durable: Promise<void> } {
    const ids: string[] = [];
    const places: number[] = [];
    const waits = new Set<Promise<void>>();
    if (this.open && !joinsOpenBatch(this.open.batch.acceptedAt, newestRouted)) this.seal();
    events.forEach((event, i) => {
      if (this.open && !fitsBatch(this.open.batch.events.length, this.open.bytes, event)) this.seal();
      this.open ??= this.newBatch(newestRouted);
      const { batch } = this.open;
      const place = batch.events.push(event) - 1;
      for (const destinationId of refs?.[i] ?? []) (batch.refs ??= {})[destinationId] = [...(batch.refs?.[destinationId] ?? []), place];
      this.open.bytes += eventSize(event);
      ids.push(batch.id);
      places.push(place);
      waits.add(this.open.durable);
    });
    this.schedule();
    return { ids, places, durable: Promise.all(waits).then(() => undefined) };
  }

  private newBatch(newestRouted: string | undefined): OpenBatch {
    const now = this.clock.now();
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const durable = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Every caller awaits it; this keeps a batch nobody awaits any more from an unhandled rejection.
    durable.catch(() => undefined);
    return { batch: { id: intakeBatchId(now, this.random()), acceptedAt: openedAt(now, newestRouted), events: [] }, bytes: 0, durable, resolve, reject };
  }

  private seal(): void {
    if (this.open) this.sealed.push(this.open);
    this.open = undefined;
  }

  /**
   * The next write starts on the next turn of the event loop (requests arriving together share
   * it), once no write is in flight and the gap since the last one has passed (a full batch
   * does not wait for the gap).
   */
  private schedule(): void {
    if (this.scheduled || this.writing) return;
    if (!this.open && this.sealed.length === 0) return;
    this.scheduled = true;
    const wait = this.sealed.length > 0 ? 0 : Math.max(0, this.lastWrite + this.gapMs - performance.now());
    const run = () => {
      this.scheduled = false;
      // A timer counts from the event loop's cached time, which a busy turn leaves behind: it may fire early.
      if (this.sealed.length === 0 && this.lastWrite + this.gapMs > performance.now()) return this.schedule();
      this.writeNext();
    };
    if (wait > 0) setTimeout(run, wait);
    else setImmediate(run);
  }

  /**
   * Writes the batch; after a failed write, reads whether it is stored all the same (a write
   * whose reply was lost has landed: answering 503 then made producers resend events Herald had
   * accepted, and their lanes sent them twice), and writes it once more if it is not (the same
   * document: a second write of it changes nothing). The read is on this path only: the journal's
   * normal write costs what it did. Rejects with IntakeNotRecorded.
   */
  private async durably(batch: IntakeBatch): Promise<void> {
    let last: unknown;
    for (let attempt = 1; attempt <= JOURNAL_WRITE_TRIES; attempt++) {
      try {
        await this.store.add(batch);
        return;
      } catch (e) {
        last = e;
      }
      let held: boolean;
      try {
        held = await this.store.holds(batch.id);
      } catch (e) {
        throw new IntakeNotRecorded(last, 'unknown', e);
      }
      if (held) {
        this.log?.warn('an intake journal write failed but had landed (its reply was lost): the events are accepted', { intake: batch.id, events: batch.events.length, error: errorText(last) });
        return;
      }
    }
    throw new IntakeNotRecorded(last, 'absent');
  }

  private writeNext(): void {
    if (this.writing) return;
    if (this.sealed.length === 0) this.seal();
    const next = this.sealed.shift();
    if (!next) return;
    this.writing = true;
    this.lastWrite = performance.now();
    this.durably(next.batch)
      .then(next.resolve, next.reject)
      .finally(() => {
        this.writing = false;
        this.schedule();
      });
  }
}

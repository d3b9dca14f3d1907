import { randomBytes } from 'node:crypto';
import { gzipped } from '../../../compression';
import { DocumentData, Firestore } from '@google-cloud/firestore';
import { DeliveryRecord } from '../../../domain/retry/delivery';
import { deliveryExpiry } from '../../../domain/delivery/delivery-retention';
import { commitsOf, GROUP_LIMITS, groupKey, PACE_SAMPLE, paceLingerMs } from '../../../domain/delivery/grouped-outcomes';
import { GRPC, grpcCode } from '../../../domain/retry/grpc-status';
import type { OperationCounter } from '../stores';
import type { AddedDelivered, DeliveredLinger } from '../../../ports/deliveries';
import { COMMIT_FIRST_PAUSE_MS, COMMIT_TRIES, groupsOf, Waiting } from './group-commits';
import { DeliveryGroupReads } from './group-reads';
import { compacted, packedOf, StoredGroup, storedBytes, withoutDerivedId } from './stored-group';
import { Metrics } from '../../../ports/telemetry';
import { UNSURE_CODES } from './unsure-writes';

/** How long settled records are kept (HERALD_DELIVERY_RETENTION_DAYS); `now`: the clock their expiry counts from. */
export interface DeliveryRetention {
  retentionMs: number;
  now: () => Date;
}

/** Longest an outcome waits for sends under way to join its commit (added to its push's ack, never to its delivery). */
export const GROUP_WAIT_MS = 20;

/**
 * Group commit of first attempts that ended DELIVERED (domain/delivery/grouped-outcomes.ts): while one
 * commit is in flight, the outcomes that finish wait, and go together in the next — one write
 * per account among them, however many they are — and a commit waits a moment (GROUP_WAIT_MS at
 * most) for sends already under way. A lone outcome is written at once, unless outcomes have
 * been ending close together (it then waits a gap or two for the next: paceLingerMs), so a quiet
 * Herald waits for nothing; under load one write carries many. Each caller's promise settles when its
 * outcome is durable (or its commit failed: the caller does not ack its push, and Pub/Sub
 * brings it again).
 */
/**
 * Member ids remembered per instance for recordedHere: a late success meets its own instance's
 * earlier copy within minutes, and 50,000 ids are a few MiB.
 */
const COMMITTED_KEPT = 50_000;

export class FirestoreDeliveryGroups extends DeliveryGroupReads {
  private queue: Waiting[] = [];
  private committing = false;
  /** Outcomes queued or being committed, by delivery id (`recorded`: a failure of the same delivery must not stand beside one). */
  private readonly pending = new Map<string, Set<Waiting>>();
  /** Sends under way whose outcome may join the next commit (expect()). */
  private underway = 0;
  /** When the last outcomes were added (epoch ms, oldest first): their pace lets a lone one wait for company (paceLingerMs). */
  private recent: number[] = [];
  private timer?: { handle: NodeJS.Timeout; at: number };
  /** This instance's part of its groups' ids: 48 random bits, 8 characters (a group's id is in each of its index entries). */
  private readonly writer = randomBytes(6).toString('base64url');
  private seq = 0;
  /** Ids of members this instance committed, oldest first (recordedHere). */
  private readonly committed = new Set<string>();

  constructor(
    db: Firestore,
    ops: OperationCounter,
    private readonly retention: DeliveryRetention,
    private readonly toDoc: (record: DeliveryRecord) => DocumentData,
    fromDoc: (doc: DocumentData) => DeliveryRecord,
    collection: string,
    /**
     * How an outcome that goes alone is written: a document of its own, created only if none has
     * its id. Absent, it is a group of one like any other.
     */
    private readonly alone?: (record: DeliveryRecord) => Promise<boolean>,
    /** Herald's own metrics: the size of each commit; absent: none recorded. */
    private readonly metrics?: Pick<Metrics, 'record'>,
  ) {
    super(db, ops, fromDoc, collection);
  }

  /**
   * A send whose outcome may be grouped has begun: until the returned function is called (its
   * outcome added, or not to be), a commit waits for it, up to GROUP_WAIT_MS after the oldest
   * outcome queued. Outcomes that end close together then share a write even when no commit is
   * in flight (two pushes in flight on one lane end a few milliseconds apart); one with no send
   * under way beside it is written at once.
   */
  expect(): () => void {
    this.underway++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.underway--;
      this.commitIfDue();
    };
  }

  /**
   * Resolves once the outcome is durable: with its group, or, alone, whether it was created.
   * `lingerMs`: how long its commit may wait for more outcomes to share its write (a batch's:
   * a busy destination's next batch ends a moment later; a bundle's, the rest of the bundle),
   * unless a group's worth is queued first; `until` ends the wait when it settles.
   */
  add(record: DeliveryRecord, options: DeliveredLinger = {}): Promise<AddedDelivered> {
    let resolve!: (added: AddedDelivered) => void;
    let reject!: (e: Error) => void;
    const added = new Promise<AddedDelivered>((res, rej) => ((resolve = res), (reject = rej)));
    const at = Date.now();
    this.recent = [...this.recent.slice(1 - PACE_SAMPLE), at];
    const waiting: Waiting = {
      record,
      outcome: added.then(
        (a) => a,
        () => undefined,
      ),
      done: (e, result) => {
        if (!this.unpend(waiting)) return;
        if (e === undefined) resolve(result ?? { created: true });
        else reject(e instanceof Error ? e : new Error(String(e)));
      },
      at,
      due: at + (options.lingerMs ?? paceLingerMs(this.recent, at)),
    };
    this.queue.push(waiting);
    this.pending.set(record.id, (this.pending.get(record.id) ?? new Set()).add(waiting));
    if (options.until && waiting.due > at) {
      const end = () => {
        waiting.due = Math.min(waiting.due, Date.now());
        this.commitIfDue();
      };
      options.until.then(end, end);
    }
    this.commitIfDue();
    return added;
  }

  /**
   * Whether a success of `id` was grouped here: one pending is committed first (recorded), and
   * the ids of this instance's newest committed members are remembered (COMMITTED_KEPT). No
   * read: another instance's groups are not looked at (create's `unlessGrouped: 'here'`).
   */
  async recordedHere(id: string): Promise<boolean> {
    return (await this.recorded(id)) || this.committed.has(id);
  }

  private committedHere(id: string): void {
    this.committed.add(id);
    if (this.committed.size > COMMITTED_KEPT) this.committed.delete(this.committed.values().next().value!);
  }

  /** Whether it was pending (each outcome is settled once). */
  private unpend(waiting: Waiting): boolean {
    const set = this.pending.get(waiting.record.id);
    if (!set?.delete(waiting)) return false;
    if (set.size === 0) this.pending.delete(waiting.record.id);
    return true;
  }

  /**
   * Whether a success of `id` added here and not yet committed (a bundle member's waits up to
   * BUNDLE_OUTCOME_LINGER_MS) ends recorded: it is committed now, not after its linger, and
   * this resolves once it is durable (true) or its commit failed (false). False at once when
   * there is none. A failure of the same delivery (a second copy: a redelivered bundle, a
   * resend beside the original) asks before it is written, so that it never stands beside —
   * and is never shown over — a success a moment from being committed.
   */
  async recorded(id: string): Promise<boolean> {
    const waiting = [...(this.pending.get(id) ?? [])];
    if (waiting.length === 0) return false;
    const now = Date.now();
    for (const w of waiting) w.due = Math.min(w.due, now);
    this.commitIfDue();
    const outcomes = await Promise.all(waiting.map((w) => w.outcome));
    return outcomes.some((o) => o?.created === true);
  }

  /**
   * Commits now unless one is in flight (its end looks again), or every outcome queued may still
   * linger, or a send under way may still join (a timer looks again). An outcome that may not
   * wait takes those queued with it.
   */
  private commitIfDue(): void {
    if (this.committing || this.queue.length === 0) return;
    const now = Date.now();
    // A group's worth goes at once; else the earliest any queued outcome may wait to (a loop: the queue may hold thousands).
    let due = this.queue.length >= GROUP_LIMITS.members ? now : Number.POSITIVE_INFINITY;
    for (const w of this.queue) if (w.due < due) due = w.due;
    if (this.underway > 0) due = Math.max(due, this.queue[0]!.at + GROUP_WAIT_MS);
    if (now < due && this.queue.length < GROUP_LIMITS.members) {
      if (this.timer && this.timer.at <= due) return;
      if (this.timer) clearTimeout(this.timer.handle);
      const handle = setTimeout(() => {
        this.timer = undefined;
        this.commitIfDue();
      }, due - now);
      this.timer = { handle, at: due };
      return;
    }
    if (this.timer) clearTimeout(this.timer.handle);
    this.timer = undefined;
    void this.commitQueued();
  }

  /**
   * One commit: an outcome alone is written as a document of its own (create-if-absent: the same
   * one write, and a redelivery is told apart, as before groups); two or more, as groups.
   */
  private async commitQueued(): Promise<void> {
    this.committing = true;
    const taken = this.queue;
    this.queue = [];
    this.metrics?.record('groupCommitSize', taken.length);
    // Callers are settled once the whole commit has wound up, together (as one commit did before
    // it was cut by limits): what they add next finds no commit in flight and goes at once.
    const settle: (() => void)[] = [];
    try {
      if (taken.length === 1 && this.alone) {
        const [only] = taken;
        await this.alone(only!.record).then(
          (created) => only!.done(undefined, created ? { created: true } : { created: false }),
          (e: unknown) => only!.done(e ?? new Error('record write failed')),
        );
        return;
      }
      const now = this.retention.now();
      // Ids fixed before the first try: every try of a commit writes the same documents.
      const groups = groupsOf(taken).map((g) => ({ ...g, doc: `${g.account}_${this.writer}${(this.seq++).toString(36)}` }));
      const built = await Promise.all(
        groups.map((g) =>
          this.stored(
            g.account,
            g.members.map((w) => w.record),
            now,
          ).then(
            (stored) => ({ ...g, stored }),
            (e: unknown) => {
              // A group that cannot be stored fails its own members, not the others'.
              for (const w of g.members) settle.push(() => w.done(e ?? new Error('group could not be stored')));
              return undefined;
            },
          ),
        ),
      );
      const ready = built.filter((g): g is NonNullable<typeof g> => g !== undefined);
      // Within Firestore's per-commit limits: a queue of any size commits.
      const commits = commitsOf(ready.map((g) => storedBytes(this.col.doc(g.doc).path, g.stored))).map((indexes) => indexes.map((i) => ready[i]!));
      await Promise.all(
        commits.map(async (commit) => {
          try {
            await this.commitOnce(commit);
            for (const g of commit) {
              for (const w of g.members) {
                this.committedHere(w.record.id);
                settle.push(() => w.done(undefined, { created: true, group: g.doc }));
              }
            }
          } catch (e) {
            for (const g of commit) for (const w of g.members) settle.push(() => w.done(e ?? new Error('group commit failed')));
          }
        }),
      );
    } catch (e) {
      // Outcomes not settled yet (a member that cannot even be measured): failed, their pushes not acked.
      for (const w of taken) settle.push(() => w.done(e ?? new Error('group commit failed')));
    } finally {
      for (const s of settle) s();
      this.committing = false;
      // What finished meanwhile goes next, all together.
      this.commitIfDue();
    }
  }

  /**
   * Writes `commit`'s groups, created (their ids are this writer's, fixed before the first try),
   * tried again on an answer that leaves it unsure whether they landed: ALREADY_EXISTS on a try
   * after the first says an earlier one did (a commit is atomic: all of it). Unsure after the
   * last try, one group is read back (a read, on this path only): there, the commit landed.
   * Costs nothing more when the first try is answered.
   */
  private async commitOnce(commit: readonly { doc: string; stored: StoredGroup }[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const batch = this.db.batch();
        for (const g of commit) batch.create(this.col.doc(g.doc), g.stored);
        await batch.commit();
        this.ops.writes += commit.length;
        return;
      } catch (e) {
        const code = grpcCode(e);
        if (attempt > 1 && code === GRPC.ALREADY_EXISTS) {
          this.ops.writes += commit.length;
          return;
        }
        if (code === undefined || !UNSURE_CODES.includes(code)) throw e;
        if (attempt >= COMMIT_TRIES) {
          const landed = await this.col.doc(commit[0]!.doc).get();
          this.ops.reads++;
          if (!landed.exists) throw e;
          this.ops.writes += commit.length;
          return;
        }
        await new Promise((r) => setTimeout(r, COMMIT_FIRST_PAUSE_MS * 2 ** (attempt - 1)));
      }
    }
  }

  private async stored(account: string, members: readonly DeliveryRecord[], now: Date): Promise<StoredGroup> {
    const published = members.map((m) => m.publishedAt ?? m.lastAttemptAt ?? now.toISOString()).sort();
    const expiries = members.map((m) => deliveryExpiry(m, this.retention.retentionMs, now)?.getTime() ?? now.getTime());
    const unique = (values: (string | undefined)[]) => [...new Set(values.filter((v): v is string => v !== undefined))];
    const docs = members.map((m) => this.toDoc(m));
    // A member with bytes in it (an event: never, for a DELIVERED record) would not survive JSON: kept as maps.
    const json = docs.every((d) => !Object.values(d).some((v) => Buffer.isBuffer(v) || (typeof v === 'object' && v !== null && 'data' in v && Buffer.isBuffer((v as { data: unknown }).data))));
    return {
      account,
      ids: unique(members.map((m) => groupKey(m.id))),
      eventIds: unique(members.map((m) => groupKey(m.eventId))),
      destinations: unique(members.map((m) => m.destinationId)),
      intakes: unique(members.map((m) => m.intake)),
      oldest: published[0]!,
      newest: published[published.length - 1]!,
      committedAt: now.toISOString(),
      ...(json ? { packed: await gzipped(JSON.stringify(packedOf(docs.map(withoutDerivedId), members))) } : compacted(docs)),
      expireAt: new Date(Math.max(...expiries)),
    };
  }
}

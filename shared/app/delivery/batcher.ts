import { BatchGatherer, batchBytesOf, batchShare, ClosedBatch } from '../../domain/modes/batching';
import { PushDelivery } from '../../domain/events/cloudevents-pubsub';
import { deliveryPolicyOf, Destination } from '../../domain/destinations/destination';
import { laneStep } from '../../domain/delivery/lane-step';
import { readLaneMessage, ReadLaneMessage } from '../../domain/intake/lane-message';
import { BatcherLeaseStore, PulledMessage, PullQueue } from '../../ports/messaging';
import { Logger } from '../../ports/clock';
import { BatcherLeaseKeeper } from '../lanes/batcher-wake';
import { MessageHolds } from '../lanes/message-holds';
import { BATCHER_WAKE } from '../../domain/modes/batcher-lease';
import { ClaimedMember, claimedBatch, FirstMember, firstBatch } from './batch-attempt';
import { deliverFromLane } from './deliver';
import { journalReaderOnce, JournalReader, NO_JOURNAL, pulledParts } from '../lanes/lanes';
import { DeliverDeps } from './delivery-context';
import { eventKey } from '../../domain/events/event';
import { pulledBefore } from '../../domain/delivery/redelivered-push';

/**
 * The batcher: pulls the batch lane (topology.ts batchLaneNames), gathers each batched
 * destination's events into batches (domain/modes/batching.ts BatchGatherer) and sends each batch
 * when it is full, would overflow, or its oldest event has waited `maxWaitMs`
 * (app/delivery/batch-attempt.ts). A message is acked only once its event's record is durable; one the
 * run could not finish is released, and the next pull takes it again. Every event of a
 * destination comes here, whichever instance ingested it: one batcher at a time (a scheduled
 * run on GCP, in-process locally) sees them all, and a second one running beside it takes a
 * share of the messages and makes smaller batches, never wrong ones.
 *
 * A message that cannot be batched (its destination gone, suspended, or no longer batched; a
 * retry without a batch) is handled as `deliver` handles a push: deliverFromLane.
 */

export interface BatcherDeps {
  deliver: DeliverDeps;
  queue: PullQueue;
  /** The pull subscription's name, as a push would name it (logs, dead letters of foreign messages). */
  subscription: string;
  log: Logger;
  /** Where the run says until when it goes on pulling (app/lanes/batcher-wake.ts): publishers wake a run when none does. */
  lease?: BatcherLeaseStore;
  /** The intake journal, where messages that name their events find them (domain/intake/lane-reference.ts). */
  journal?: JournalReader;
}

export interface BatcherOptions {
  /** Stop after this long (the scheduled run's window); absent: until stopped. */
  untilMs?: number;
  /** With `untilMs`: end early once a pull finds nothing, nothing is open or being sent, and none came for `idleEndMs`. */
  endWhenIdle?: boolean;
  /** Default IDLE_END_MS. */
  idleEndMs?: number;
  /** How often held messages are looked at, to be held on (app/lanes/message-holds.ts; default HOLD_TICK_MS). */
  holdTickMs?: number;
}

export interface BatcherReport {
  pulled: number;
  batches: number;
  /** Events in those batches. */
  batched: number;
  /** Messages handled one by one (deliverFromLane). */
  single: number;
  /** Messages given back to the subscription: a batch that failed (a Herald fault) or the run ended before it was due. */
  released: number;
  ended: 'stopped' | 'time-up' | 'idle';
}

/** Most messages a pull takes (Pub/Sub's limit per pull is 1,000). */
const PULL_MAX = 1000;
/** Messages held at once (open and being sent); pulling waits below it. */
const HELD_MAX = 20_000;
/**
 * How long pulled messages are kept from other pulls, beyond their batches' longest wait and
 * attempt timeout: their records, with room. A batcher that dies leaves its messages to the
 * next pull after this (between HOLD_MIN_SECONDS and Pub/Sub's 600 s), not after a fixed
 * deadline sized for the slowest destination.
 */
const HOLD_MARGIN_SECONDS = 30;
const HOLD_MIN_SECONDS = 10;
/**
 * A run that has seen batch messages ends at an empty pull only once none has come for this
 * long: sparse batched traffic (an event every few seconds) keeps its batcher instead of waiting
 * for the next scheduled run, and a deployment with none pays for one empty pull a run.
 */
export const IDLE_END_MS = 15_000;
/** A retried batch's members come back from one pump round within moments: wait this long for the rest. */
export const RETRY_GATHER_MS = 2_000;

interface Ticket {
  ackId: string;
  message: ReadLaneMessage & { pulledBefore?: true };
  destination: Destination;
}

export interface BatcherRun {
  done: Promise<BatcherReport>;
  stop(): Promise<void>;
  /** From now on, end at a pull that finds nothing while nothing is open or being sent (and none came for IDLE_END_MS). */
  endWhenIdle(): void;
}

export function runBatcher(deps: BatcherDeps, options: BatcherOptions = {}): BatcherRun {
  const report: BatcherReport = { pulled: 0, batches: 0, batched: 0, single: 0, released: 0, ended: 'stopped' };
  const gatherer = new BatchGatherer<Ticket>();
  const sending = new Set<Promise<void>>();
  let sendingMembers = 0;
  let stopped = false;
  let endIdle = options.endWhenIdle ?? false;
  let lastMessageAt = 0;
  let timer: NodeJS.Timeout | undefined;
  const start = Date.now();
  const timeLeft = () => (options.untilMs === undefined ? Infinity : options.untilMs - (Date.now() - start));
  const keeper = deps.lease ? new BatcherLeaseKeeper(deps.lease, deps.log) : undefined;
  /** Until when this run is sure to go on pulling: for good (local mode), or while its last message keeps an idle end away. */
  const horizon = (): number | undefined => {
    if (options.untilMs === undefined && !endIdle) return Date.now() + BATCHER_WAKE.aliveMs;
    if (lastMessageAt === 0) return undefined;
    return Math.min(start + (options.untilMs ?? Infinity), lastMessageAt + (options.idleEndMs ?? IDLE_END_MS));
  };
  const now = () => deps.deliver.clock.now().getTime();
  // Held on while their batches wait, send and are recorded, however long that takes.
  const holds = new MessageHolds(deps.queue, now, deps.log, options.holdTickMs);

  const track = (work: Promise<void>, members: number) => {
    sendingMembers += members;
    // Nothing awaits a send as it ends (the loop races them only when full): a failure left unhandled would end the process.
    const p = work.catch((e: unknown) => deps.log.error('batcher: a send failed after its outcome; its messages come back when their hold ends', { error: (e as Error).message })).finally(() => {
      sending.delete(p);
      sendingMembers -= members;
    });
    sending.add(p);
  };
  const release = async (ackIds: string[]) => {
    report.released += ackIds.length;
    holds.forget(ackIds);
    await deps.queue.release(ackIds).catch((e: unknown) => deps.log.warn('batcher: releasing messages failed; they come back when their hold ends', { error: (e as Error).message, messages: ackIds.length }));
  };
  /**
   * A pulled message is one event, or a bundle of several (lanes.ts publishBundled): it is acked
   * once every part is recorded, and released, whole, once every part has ended if any failed.
   */
  const parts = new Map<string, { total: number; left: number; failed: boolean }>();
  const expectParts = (ackId: string, total: number) => parts.set(ackId, { total, left: total, failed: false });
  /**
   * A first attempt's further copies that came while one was held here (a producer's resend
   * beside its original, a message brought again with its first still open): by delivery, the
   * copies waiting on the one in a batch. They go in no batch — two copies in one request, or in
   * two sent at once, reached the receiver twice — and end as it ends: acked once it is
   * recorded, given back if it is.
   */
  const twins = new Map<string, Ticket[]>();
  const twinKey = (t: Ticket) => (t.message.kind === 'claimed' ? undefined : `${t.destination.id}\n${eventKey(t.message.event.attributes)}`);
  /** The copies that waited on these tickets, no longer waiting. */
  const twinsOf = (tickets: readonly Ticket[]): Ticket[] =>
    tickets.flatMap((t) => {
      const key = twinKey(t);
      const waiting = key === undefined ? undefined : twins.get(key);
      if (key !== undefined) twins.delete(key);
      return waiting ?? [];
    });
  const finish = async (ackIds: readonly string[], ok: boolean) => {
    const [acks, releases] = [[] as string[], [] as string[]];
    for (const ackId of ackIds) {
      const p = parts.get(ackId);
      if (!p) continue;
      p.left--;
      p.failed ||= !ok;
      if (p.left > 0) continue;
      parts.delete(ackId);
      (p.failed ? releases : acks).push(ackId);
    }
    if (releases.length > 0) await release(releases);
    if (acks.length > 0) {
      holds.forget(acks);
      await deps.queue.ack(acks).catch((e: unknown) =>
        deps.log.warn('batcher: acknowledging messages failed; they come back when their hold ends and their batches may go again', { error: (e as Error).message, messages: acks.length }),
      );
    }
  };

  const send = (closed: ClosedBatch<Ticket>) => {
    const tickets = closed.members.map((m) => m.ticket);
    const destination = tickets[tickets.length - 1]!.destination;
    report.batches++;
    report.batched += tickets.length;
    const attempt = tickets[0]!.message.kind === 'claimed'
      ? claimedBatch(deps.deliver, destination, tickets.map((t) => t.message as ClaimedMember))
      : firstBatch(deps.deliver, destination, tickets.map((t) => t.message as FirstMember));
    const ended = (ok: boolean) => finish([...tickets, ...twinsOf(tickets)].map((t) => t.ackId), ok);
    track(
      attempt.then(
        () => ended(true),
        async (e: unknown) => {
          deps.log.error('batch could not be recorded; its messages go back to the batch lane and are sent again', { destinationId: destination.id, members: tickets.length, error: (e as Error).message });
          await ended(false);
        },
      ),
      tickets.length,
    );
  };

  const flushDue = () => {
    clearTimeout(timer);
    timer = undefined;
    for (const closed of gatherer.due(now())) send(closed);
    const next = gatherer.nextDueAt();
    if (next !== undefined && !stopped) timer = setTimeout(flushDue, Math.max(0, next - now()));
  };

  const single = (pulled: PulledMessage, push: PushDelivery) => {
    report.single++;
    // Kept by the subscription's deadline, Pub/Sub's least (10 s) assumed; held on past it while it is delivered.
    holds.track([pulled.ackId], holdFor([]), now() + HOLD_MIN_SECONDS * 1000);
    track(
      deliverFromLane(deps.deliver, push).then(
        () => finish([pulled.ackId], true),
        async (e: unknown) => {
          deps.log.error('batch lane message could not be handled; it goes back and comes again', { messageId: pulled.messageId, error: (e as Error).message });
          await finish([pulled.ackId], false);
        },
      ),
      1,
    );
  };

  /** A pulled message read: a batch's member (its ticket), or handled alone at once (undefined). */
  const classify = async (pulled: PulledMessage, destinationOf: (id: string) => Promise<Destination | undefined>): Promise<Ticket | undefined> => {
    const push: PushDelivery = { subscription: deps.subscription, messageId: pulled.messageId, publishTime: pulled.publishTime, message: pulled.message, ...(pulled.deliveryAttempt !== undefined ? { deliveryAttempt: pulled.deliveryAttempt } : {}) };
    const read = readLaneMessage(push);
    if (!read.ok) return void single(pulled, push);
    const message = read.value;
    const destination = await destinationOf(message.destinationId);
    const step = laneStep(message, destination, () => false);
    if (!destination?.batch || step.kind === 'unusable' || step.kind === 'queue' || (message.kind === 'claimed' && !message.batch)) return void single(pulled, push);
    // A first attempt's message that came back (its reader died, its hold ran out) is read before it is sent.
    const again = message.kind !== 'claimed' && pulledBefore(pulled.deliveryAttempt, pulled.publishTime.getTime(), now());
    return { ackId: pulled.ackId, message: again ? { ...message, pulledBefore: true } : message, destination };
  };

  /** Into its open batch: a retry's with the rest of its batch, a first attempt's with its destination's next. */
  const gather = (ticket: Ticket) => {
    const key = twinKey(ticket);
    if (key !== undefined) {
      const waiting = twins.get(key);
      if (waiting) return void waiting.push(ticket);
      twins.set(key, []);
    }
    const { message, destination } = ticket;
    const batch = destination.batch!;
    const member = { event: message.event, bytes: batchShare(message.event), ticket };
    const closed =
      message.kind === 'claimed'
        ? gatherer.add(`${destination.id}\n${message.batch!.id}`, { maxEvents: message.batch!.size, maxWaitMs: RETRY_GATHER_MS, maxBytes: Number.POSITIVE_INFINITY }, { ...member, acceptedAt: now() })
        : gatherer.add(destination.id, { maxEvents: batch.maxEvents, maxWaitMs: batch.maxWaitMs, maxBytes: batchBytesOf(batch) }, { ...member, acceptedAt: Date.parse(message.publishedAt) });
    for (const c of closed) send(c);
  };

  /** What the messages of one pull need: their batches' longest wait and attempt, and the margin. */
  const holdFor = (batched: readonly Destination[]) => {
    const longest = batched.reduce((ms, d) => Math.max(ms, (d.batch?.maxWaitMs ?? 0) + deliveryPolicyOf(d, deps.deliver.policy).attemptTimeoutMs), 0);
    return Math.min(600, Math.max(HOLD_MIN_SECONDS, Math.ceil(longest / 1000) + HOLD_MARGIN_SECONDS));
  };

  const done = (async (): Promise<BatcherReport> => {
    // A batcher that runs for good (local mode) says so before its first pull: no publisher wakes another meanwhile.
    keeper?.pulling(horizon());
    while (!stopped && timeLeft() > 0) {
      if (gatherer.waiting + sendingMembers >= HELD_MAX) {
        await Promise.race(sending);
        continue;
      }
      let pulled: PulledMessage[];
      try {
        pulled = await deps.queue.pull(PULL_MAX);
      } catch (e) {
        deps.log.error('batcher: pulling the batch lane failed; trying again', { error: (e as Error).message });
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      if (pulled.length > 0) {
        report.pulled += pulled.length;
        lastMessageAt = Date.now();
        const tickets: Ticket[] = [];
        // One look per destination a pull: a bundle's hundred members share theirs (and its secret is opened once).
        const looked = new Map<string, Promise<Destination | undefined>>();
        const destinationOf = (id: string) => {
          let found = looked.get(id);
          if (found === undefined) looked.set(id, (found = deps.deliver.directory.get(id)));
          return found;
        };
        const journal = journalReaderOnce(deps.journal ?? NO_JOURNAL);
        for (const p of pulled) {
          // A bundle's members share its ack id; one that cannot be read goes on alone (deliver dead-letters it).
          let members: PulledMessage[];
          try {
            members = await pulledParts(p, journal);
          } catch (e) {
            // Not given back at once (a read failing again at once would spin): it comes back when the subscription's deadline ends.
            deps.log.error('batch lane message could not be read (its events in the intake journal); it comes again after its deadline', { messageId: p.messageId, error: (e as Error).message });
            continue;
          }
          if (members.length === 0) {
            // It named a journal batch reconciled since: every delivery it names is recorded.
            deps.log.info('batch lane message named a reconciled journal batch: its deliveries are recorded; acked', { messageId: p.messageId });
            await deps.queue.ack([p.ackId]).catch((e: unknown) => deps.log.warn('batcher: acknowledging messages failed; they come back when their hold ends', { error: (e as Error).message, messages: 1 }));
            continue;
          }
          expectParts(p.ackId, members.length);
          for (const part of members) {
            try {
              const ticket = await classify(part, destinationOf);
              if (ticket) tickets.push(ticket);
            } catch (e) {
              deps.log.error('batch lane message could not be read; it goes back and comes again', { messageId: part.messageId, error: (e as Error).message });
              await finish([part.ackId], false);
            }
          }
        }
        // Kept from other pulls while their batches fill and are sent (one handled alone keeps the subscription's deadline).
        if (tickets.length > 0) {
          await holds.hold([...new Set(tickets.map((t) => t.ackId))], holdFor(tickets.map((t) => t.destination))).catch((e: unknown) => deps.log.warn('batcher: holding pulled messages failed; a batch that outlives the subscription deadline may be sent twice', { error: (e as Error).message }));
        }
        // Everything pulled goes in before any batch is closed for its wait: a backlog leaves in full batches.
        for (const t of tickets) gather(t);
      }
      flushDue();
      if (!stopped) keeper?.pulling(horizon());
      const quiet = report.pulled === 0 || Date.now() - lastMessageAt >= (options.idleEndMs ?? IDLE_END_MS);
      if (pulled.length === 0 && endIdle && quiet && gatherer.waiting === 0 && sending.size === 0) {
        report.ended = 'idle';
        break;
      }
    }
    if (report.ended !== 'idle') report.ended = stopped ? 'stopped' : 'time-up';
    clearTimeout(timer);
    // Batches not yet due go back whole: the next pull (the next run) finds them overdue and sends them at once. One
    // that holds part of a bundle whose other parts were sent goes now instead: released, the bundle would bring those again.
    const open = gatherer.drain();
    const openParts = new Map<string, number>();
    for (const b of open) for (const m of b.members) openParts.set(m.ticket.ackId, (openParts.get(m.ticket.ackId) ?? 0) + 1);
    const going = new Set([...openParts].filter(([ackId, n]) => (parts.get(ackId)?.total ?? n) > n).map(([ackId]) => ackId));
    const toSend = new Set<ClosedBatch<Ticket>>();
    for (let grew = true; grew; ) {
      grew = false;
      for (const b of open) {
        if (toSend.has(b) || !b.members.some((m) => going.has(m.ticket.ackId))) continue;
        toSend.add(b);
        for (const m of b.members) going.add(m.ticket.ackId);
        grew = true;
      }
    }
    for (const b of toSend) send(b);
    const unsent = open.filter((b) => !toSend.has(b)).flatMap((b) => b.members.map((m) => m.ticket));
    const left = [...new Set([...unsent, ...twinsOf(unsent)].map((t) => t.ackId))];
    for (const ackId of left) parts.delete(ackId);
    if (left.length > 0) await release(left);
    await Promise.allSettled([...sending]);
    holds.stop();
    return report;
  })();

  return {
    done,
    async stop() {
      stopped = true;
      await done;
    },
    endWhenIdle() {
      endIdle = true;
    },
  };
}

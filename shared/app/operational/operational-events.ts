import { Admission, operationalEvent, OperationalEmitter, OperationalNotice } from '../../domain/operational/operational-events';
import { NoticeLimit } from '../../domain/operational/notice-limit';
import { Clock, Logger } from '../../ports/clock';
import { DestinationDirectory } from '../destinations/destination-directory';
import { HeraldEvent } from '../../domain/events/event';

export interface OperationalDeps {
  /**
   * Ingest's core for one account, without its publish quota, when a destination of the account
   * would receive the events (app/intake/admit-notices.ts, wired by runtime/intake-deps.ts):
   * Herald's notices are admitted as a producer's events are.
   */
  admit: (account: string, events: HeraldEvent[]) => Promise<Admission>;
  /** The `target` of a death's destination (its record names only the destination). */
  directory: Pick<DestinationDirectory, 'get'>;
  clock: Clock;
  log: Logger;
  /** The types' prefix (HERALD_OPERATIONAL_EVENT_PREFIX). */
  prefix: string;
  /** An account that receives a copy of every account's operational events (HERALD_OPERATIONAL_EVENTS_ACCOUNT); absent: none. */
  operatorAccount?: string;
  /** Per subject and kind (HERALD_OPERATIONAL_EVENTS_INTERVAL_MS). */
  limit: NoticeLimit;
}

/** A state change is announced once per change (one transaction made it): never held back by the rate limit. */
const STATE_CHANGES = new Set<OperationalNotice['kind']>(['destination.suspended', 'destination.reactivated']);

/**
 * Herald's operational events, delivered by Herald itself (docs/operational-events.md): each
 * notice becomes a CloudEvent of the account it concerns and goes through ingest's core, so an
 * ordinary destination of that account subscribed to its type receives it — routed, journaled,
 * retried and signed like any other event. An account where no destination would receive it
 * gets nothing (no journal write, nothing kept). A suspension's email is the suspension's own
 * (app/delivery/suspend-and-reactivate.ts), sent whatever becomes of its notice.
 */
export class OperationalEvents implements OperationalEmitter {
  constructor(private readonly deps: OperationalDeps) {}

  /** Into the account it concerns, and the operator's copy: rate-limited unless a state change. */
  async emit(notice: OperationalNotice): Promise<void> {
    const { deps } = this;
    const subject = notice.concerns ?? notice.data.account;
    try {
      let suppressed = 0;
      if (!STATE_CHANGES.has(notice.kind)) {
        const taken = deps.limit.take(`${notice.kind}\n${subject}`, deps.clock.now().getTime());
        if (!taken.ok) return;
        suppressed = taken.suppressed;
      }
      const sent = { ...notice, data: { ...notice.data, ...(await this.targetOf(notice)), suppressed } } as OperationalNotice;
      const accounts = [notice.data.account, ...(deps.operatorAccount !== undefined && deps.operatorAccount !== notice.data.account ? [deps.operatorAccount] : [])];
      const at = deps.clock.now();
      await Promise.all(accounts.map((account) => this.publishInto(account, operationalEvent(sent, at, deps.prefix, account), notice)));
    } catch (e) {
      deps.log.error('operational event not published', { kind: notice.kind, subject, error: (e as Error).message });
    }
  }

  /**
   * The `target` of a notice about a destination that does not name it: a death is noticed
   * where the record is, which names the destination and not its url or topic. Looked up in
   * the destinations held in memory, once the rate limit let the notice through; none for a
   * destination deleted meanwhile.
   */
  private async targetOf(notice: OperationalNotice): Promise<{ target?: string }> {
    if (notice.concerns === undefined || ('target' in notice.data && notice.data.target !== undefined)) return {};
    const destination = await this.deps.directory.get(notice.concerns);
    const target = destination?.url ?? destination?.topic;
    return target === undefined ? {} : { target };
  }

  /** Into one account, through ingest's core, when a destination of it would receive the event. */
  private async publishInto(account: string, event: ReturnType<typeof operationalEvent>, notice: OperationalNotice): Promise<void> {
    const { deps } = this;
    const fields = { kind: notice.kind, account, eventId: event.attributes.id, ...(notice.concerns ? { destinationId: notice.concerns } : {}) };
    const result = await deps.admit(account, [event]);
    if (result.kind === 'unrouted') {
      deps.log.debug('operational event: no destination of the account subscribes to it', fields);
      return;
    }
    if (result.kind !== 'accepted') {
      deps.log.error('operational event not accepted', { ...fields, result: result.kind, error: result.error });
      return;
    }
    deps.log.info('operational event published', fields);
  }
}

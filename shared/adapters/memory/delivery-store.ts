import { DeliveryRecord } from '../../domain/retry/delivery';
import { DeliveryLogQuery, inLog, logOrder, logPage } from '../../domain/stats/delivery-log';
import { ownOver, parseHeadEntryId, standing } from '../../domain/delivery/grouped-outcomes';
import { EMPTY_TALLY, IntakeTally, tallyOf } from '../../domain/intake/intake-tally';
import { AddedDelivered, DeliveryPage, DeliveryStore, WorkStatus } from '../../ports/deliveries';

type Own = DeliveryRecord & { groupCopies?: number };

/**
 * The delivery store in memory, for unit tests of the use cases; it passes the same conformance
 * suite as Firestore's. Like it, it keeps own records and grouped ones apart, and shows each
 * delivery as domain/delivery/grouped-outcomes.ts says it stands.
 */
export class MemoryDeliveryStore implements DeliveryStore {
  private readonly records = new Map<string, Own>();
  private readonly grouped = new Map<string, DeliveryRecord[]>();

  /**
   * `alone`: how addDelivered writes (here every outcome commits alone): `document`, as
   * Firestore writes a lone one (create-if-absent); `group`, as it writes one among others.
   */
  constructor(private readonly grouping: { alone: 'document' | 'group' } = { alone: 'document' }) {}

  /** Every delivery as it stands. */
  private view(): DeliveryRecord[] {
    const ids = new Set([...this.records.keys(), ...this.grouped.keys()]);
    return [...ids].flatMap((id) => {
      const r = this.standingOf(id);
      return r ? [r] : [];
    });
  }

  private standingOf(id: string): DeliveryRecord | undefined {
    return standing(this.records.get(id), this.grouped.get(id) ?? []);
  }

  /** Every delivery as it stands, copies (the memory ordered keys search them). */
  all(): DeliveryRecord[] {
    return this.view().map((r) => copy(r)!);
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    return copy(this.standingOf(id));
  }

  async addDelivered(record: DeliveryRecord): Promise<AddedDelivered> {
    if (this.grouping.alone === 'document') return (await this.create(record)) ? { created: true } : { created: false };
    this.grouped.set(record.id, [...(this.grouped.get(record.id) ?? []), copy(record)!]);
    return { created: true, group: 'memory' };
  }

  async put(record: DeliveryRecord): Promise<void> {
    this.records.set(record.id, copy(record)!);
  }

  async create(record: DeliveryRecord, options: { unlessGrouped?: boolean | 'here' } = {}): Promise<boolean> {
    if (this.records.has(record.id) || (options.unlessGrouped && this.grouped.has(record.id))) return false;
    this.records.set(record.id, copy(record)!);
    return true;
  }

  async update(id: string, decide: (current: DeliveryRecord | undefined) => DeliveryRecord | undefined): Promise<DeliveryRecord | undefined> {
    const own = this.records.get(id);
    const copies = own ? [] : (this.grouped.get(id) ?? []);
    const next = decide(copy(standing(own, copies)));
    if (next !== undefined) this.records.set(id, own?.groupCopies ? { ...copy(next)!, groupCopies: own.groupCopies } : ownOver(copy(next)!, copies));
    return copy(next);
  }

  async due(now: Date, claimExpiredBefore: Date, limit: number): Promise<string[]> {
    const all = this.view();
    const expired = all
      .filter((r) => r.status === 'IN_FLIGHT' && r.claimedAt !== undefined && r.claimedAt <= claimExpiredBefore.toISOString())
      .sort((a, b) => a.claimedAt!.localeCompare(b.claimedAt!));
    const pending = all
      .filter((r) => r.status === 'PENDING' && r.availableAt !== undefined && r.availableAt <= now.toISOString())
      .sort((a, b) => a.availableAt!.localeCompare(b.availableAt!));
    return [...expired.slice(0, limit), ...pending.slice(0, limit)].map((r) => r.id).slice(0, limit);
  }

  async nextAvailableAt(): Promise<Date | undefined> {
    const times = this.view().filter((r) => r.status === 'PENDING' && r.availableAt !== undefined).map((r) => r.availableAt!).sort();
    return times[0] === undefined ? undefined : new Date(times[0]);
  }

  async rateDeferred(destinationId: string, limit: number): Promise<string[]> {
    return this.view()
      .filter((r) => r.destinationId === destinationId && r.status === 'PENDING' && r.rateDeferred === true)
      .sort((a, b) => (a.availableAt ?? '').localeCompare(b.availableAt ?? ''))
      .slice(0, limit)
      .map((r) => r.id);
  }

  async list(destinationId: string, query: { status: WorkStatus; limit: number; cursor?: string }): Promise<DeliveryPage> {
    const matching = this.view()
      .filter((r) => r.destinationId === destinationId && r.status === query.status)
      .filter((r) => query.cursor === undefined || r.id > query.cursor)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const deliveries = matching.slice(0, query.limit).map((r) => copy(r)!);
    const last = deliveries[deliveries.length - 1];
    return matching.length > query.limit && last ? { deliveries, nextCursor: last.id } : { deliveries };
  }

  async log(destinationId: string, query: DeliveryLogQuery): Promise<DeliveryPage> {
    const rows = this.view()
      .filter((r) => r.destinationId === destinationId && inLog(r, query))
      .sort(logOrder)
      .slice(0, query.limit + 1)
      .map((r) => {
        const { event: _event, attemptLog: _log, ...row } = copy(r)!;
        return row;
      });
    return logPage(rows, query.limit);
  }

  async logRows(ids: readonly string[]): Promise<DeliveryRecord[]> {
    return ids.flatMap((entryId) => {
      const r = this.standingOf(parseHeadEntryId(entryId).id);
      if (!r) return [];
      const { event: _event, attemptLog: _log, ...row } = copy(r)!;
      return [row];
    });
  }

  async tallyFromIntake(intake: string, destinationIds: readonly string[]): Promise<IntakeTally> {
    return tallyOf(this.view().filter((r) => r.intake === intake && destinationIds.includes(r.destinationId)).map((r) => r.id));
  }

  /** As Firestore's aggregation over the batches' id range: records of other batches between them are in it. */
  async tallyFromIntakes(intakes: readonly string[]): Promise<IntakeTally> {
    if (intakes.length === 0) return EMPTY_TALLY;
    const sorted = [...intakes].sort();
    return tallyOf(this.view().filter((r) => r.intake !== undefined && r.intake >= sorted[0]! && r.intake <= sorted[sorted.length - 1]!).map((r) => r.id));
  }

  async fromIntake(intake: string, destinationIds: readonly string[]): Promise<Set<string>> {
    return new Set(this.view().filter((r) => r.intake === intake && destinationIds.includes(r.destinationId)).map((r) => r.id));
  }

  async intakesOf(ids: readonly string[]): Promise<Map<string, string>> {
    return new Map(ids.flatMap((id) => {
      const intake = this.standingOf(id)?.intake;
      return intake === undefined ? [] : [[id, intake] as const];
    }));
  }

  async existing(ids: readonly string[]): Promise<Set<string>> {
    return new Set(ids.filter((id) => this.records.has(id) || this.grouped.has(id)));
  }

  async countByStatus(destinationIds: readonly string[], status: WorkStatus): Promise<number> {
    return this.view().filter((r) => r.status === status && destinationIds.includes(r.destinationId)).length;
  }

  async deadLettersOwed(before: Date, limit: number): Promise<string[]> {
    return this.view()
      .filter((r) => r.deadLetterDueAt !== undefined && r.deadLetterDueAt <= before.toISOString())
      .sort((a, b) => a.deadLetterDueAt!.localeCompare(b.deadLetterDueAt!))
      .slice(0, limit)
      .map((r) => r.id);
  }
}

function copy(record: Own | undefined): DeliveryRecord | undefined {
  if (record === undefined) return undefined;
  const { event, lastError, groupCopies: _copies, ...rest } = record;
  return {
    ...rest,
    ...(lastError ? { lastError: { ...lastError } } : {}),
    ...(event ? { event: { attributes: { ...event.attributes }, data: Buffer.from(event.data) } } : {}),
  };
}

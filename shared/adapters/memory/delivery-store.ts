import { DeliveryRecord, DeliveryStatus } from '../../domain/delivery';
import { DeliveryLogQuery, inLog, logOrder, logPage } from '../../domain/delivery-log';
import { DeliveryPage, DeliveryStore } from '../../ports';

/** The delivery store in memory, for unit tests of the use cases; it passes the same conformance suite as Firestore's. */
export class MemoryDeliveryStore implements DeliveryStore {
  private readonly records = new Map<string, DeliveryRecord>();

  async get(id: string): Promise<DeliveryRecord | undefined> {
    return copy(this.records.get(id));
  }

  async put(record: DeliveryRecord): Promise<void> {
    this.records.set(record.id, copy(record)!);
  }

  async create(record: DeliveryRecord): Promise<boolean> {
    if (this.records.has(record.id)) return false;
    this.records.set(record.id, copy(record)!);
    return true;
  }

  async update(id: string, decide: (current: DeliveryRecord | undefined) => DeliveryRecord | undefined): Promise<DeliveryRecord | undefined> {
    const next = decide(copy(this.records.get(id)));
    if (next !== undefined) this.records.set(id, copy(next)!);
    return copy(next);
  }

  async due(now: Date, claimExpiredBefore: Date, limit: number): Promise<string[]> {
    const all = [...this.records.values()];
    const expired = all
      .filter((r) => r.status === 'IN_FLIGHT' && r.claimedAt !== undefined && r.claimedAt <= claimExpiredBefore.toISOString())
      .sort((a, b) => a.claimedAt!.localeCompare(b.claimedAt!));
    const pending = all
      .filter((r) => r.status === 'PENDING' && r.availableAt !== undefined && r.availableAt <= now.toISOString())
      .sort((a, b) => a.availableAt!.localeCompare(b.availableAt!));
    return [...expired.slice(0, limit), ...pending.slice(0, limit)].map((r) => r.id).slice(0, limit);
  }

  async nextAvailableAt(): Promise<Date | undefined> {
    const times = [...this.records.values()].filter((r) => r.status === 'PENDING' && r.availableAt !== undefined).map((r) => r.availableAt!).sort();
    return times[0] === undefined ? undefined : new Date(times[0]);
  }

  async rateDeferred(destinationId: string, limit: number): Promise<string[]> {
    return [...this.records.values()]
      .filter((r) => r.destinationId === destinationId && r.status === 'PENDING' && r.rateDeferred === true)
      .sort((a, b) => (a.availableAt ?? '').localeCompare(b.availableAt ?? ''))
      .slice(0, limit)
      .map((r) => r.id);
  }

  async list(destinationId: string, query: { status?: DeliveryStatus; limit: number; cursor?: string }): Promise<DeliveryPage> {
    const matching = [...this.records.values()]
      .filter((r) => r.destinationId === destinationId && (query.status === undefined || r.status === query.status))
      .filter((r) => query.cursor === undefined || r.id > query.cursor)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const deliveries = matching.slice(0, query.limit).map((r) => copy(r)!);
    const last = deliveries[deliveries.length - 1];
    return matching.length > query.limit && last ? { deliveries, nextCursor: last.id } : { deliveries };
  }

  async log(destinationId: string, query: DeliveryLogQuery): Promise<DeliveryPage> {
    const rows = [...this.records.values()]
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
    return ids.flatMap((id) => {
      const r = this.records.get(id);
      if (!r) return [];
      const { event: _event, attemptLog: _log, ...row } = copy(r)!;
      return [row];
    });
  }

  async countFromIntake(intake: string, destinationIds: readonly string[]): Promise<number> {
    return [...this.records.values()].filter((r) => r.intake === intake && destinationIds.includes(r.destinationId)).length;
  }

  async countFromIntakes(first: string, last: string): Promise<number> {
    return [...this.records.values()].filter((r) => r.intake !== undefined && r.intake >= first && r.intake <= last).length;
  }

  async existing(ids: readonly string[]): Promise<Set<string>> {
    return new Set(ids.filter((id) => this.records.has(id)));
  }

  async countByStatus(destinationIds: readonly string[], status: DeliveryStatus): Promise<number> {
    return [...this.records.values()].filter((r) => r.status === status && destinationIds.includes(r.destinationId)).length;
  }

  async deadLettersOwed(before: Date, limit: number): Promise<string[]> {
    return [...this.records.values()]
      .filter((r) => r.deadLetterDueAt !== undefined && r.deadLetterDueAt <= before.toISOString())
      .sort((a, b) => a.deadLetterDueAt!.localeCompare(b.deadLetterDueAt!))
      .slice(0, limit)
      .map((r) => r.id);
  }
}

function copy(record: DeliveryRecord | undefined): DeliveryRecord | undefined {
  if (record === undefined) return undefined;
  const { event, lastError, ...rest } = record;
  return {
    ...rest,
    ...(lastError ? { lastError: { ...lastError } } : {}),
    ...(event ? { event: { attributes: { ...event.attributes }, data: Buffer.from(event.data) } } : {}),
  };
}

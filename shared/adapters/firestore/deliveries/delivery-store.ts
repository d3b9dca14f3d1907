import { AggregateField, FieldPath, Query } from '@google-cloud/firestore';
import { DeliveryLogQuery, inLog, logOrder, logPage } from '../../../domain/stats/delivery-log';
import { DeliveryRecord } from '../../../domain/retry/delivery';
import { parseHeadEntryId, standing } from '../../../domain/delivery/grouped-outcomes';
import { addTallies, EMPTY_TALLY, IntakeTally, sameTally, tallyOf } from '../../../domain/intake/intake-tally';
import { DeliveryPage, DeliveryStore, WorkStatus } from '../../../ports/deliveries';
import { chunks, IN_LIMIT } from '../stores';
import { FIRESTORE_QUERIES } from '../../../firestore-schema';
import { fromDoc, fromOwn, LOG_FIELDS, Own, TALLY_FIELD, withoutDetail } from './delivery-docs';
import { FirestoreDeliveryRecords } from './delivery-records';

/**
 * Delivery records in Firestore: a document per delivery (`deliveries/{id}`) for those that
 * hold retry state or were changed, and the first attempts that ended DELIVERED as members of
 * groups (`delivery-groups`, adapters/firestore/deliveries/delivery-groups.ts). Every view reads both and shows a
 * delivery once, as domain/delivery/grouped-outcomes.ts `standing` says.
 */
export class FirestoreDeliveryStore extends FirestoreDeliveryRecords implements DeliveryStore {
  /** Ids of the records of the ordered key `keyId` waiting for a place again (FIRESTORE_QUERIES orderAgain). */
  async waitingAgain(keyId: string): Promise<string[]> {
    const snap = await this.col.where(FIRESTORE_QUERIES.orderAgain.orderBy, '==', keyId).select().get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.id);
  }

  async due(now: Date, claimExpiredBefore: Date, limit: number): Promise<string[]> {
    const q = FIRESTORE_QUERIES;
    const [pending, expired] = await Promise.all([
      this.col.where(q.duePending.equality[0], '==', 'PENDING').where(q.duePending.orderBy, '<=', now.toISOString()).orderBy(q.duePending.orderBy).limit(limit).select().get(),
      this.col.where(q.expiredClaims.equality[0], '==', 'IN_FLIGHT').where(q.expiredClaims.orderBy, '<=', claimExpiredBefore.toISOString()).orderBy(q.expiredClaims.orderBy).limit(limit).select().get(),
    ]);
    // Firestore bills a query that matches nothing as one read.
    this.ops.reads += Math.max(1, pending.size) + Math.max(1, expired.size);
    return [...expired.docs, ...pending.docs].map((d) => d.id).slice(0, limit);
  }

  async nextAvailableAt(): Promise<Date | undefined> {
    const q = FIRESTORE_QUERIES.duePending;
    const snap = await this.col.where(q.equality[0], '==', 'PENDING').orderBy(q.orderBy).limit(1).select(q.orderBy).get();
    this.ops.reads += 1;
    const at = snap.docs[0]?.get(q.orderBy) as string | undefined;
    return at === undefined ? undefined : new Date(at);
  }

  async rateDeferred(destinationId: string, limit: number): Promise<string[]> {
    const [destination, status, marker] = FIRESTORE_QUERIES.rateDeferred.equality;
    const snap = await this.col
      .where(destination, '==', destinationId)
      .where(status, '==', 'PENDING')
      .where(marker, '==', true)
      .orderBy(FIRESTORE_QUERIES.rateDeferred.orderBy)
      .limit(limit)
      .select()
      .get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.id);
  }

  /** Records holding work or settled badly are never in groups: their own documents are the whole answer. */
  async list(destinationId: string, query: { status: WorkStatus; limit: number; cursor?: string }): Promise<DeliveryPage> {
    let q = this.col.where('destinationId', '==', destinationId).where('status', '==', query.status).orderBy('id');
    if (query.cursor !== undefined) q = q.startAfter(query.cursor);
    // One extra tells whether another page exists without a second query.
    const snap = await q.limit(query.limit + 1).get();
    this.ops.reads += Math.max(1, snap.size);
    const docs = snap.docs.slice(0, query.limit);
    const deliveries = docs.map((d) => fromDoc(d.data()));
    const last = deliveries[deliveries.length - 1];
    return snap.size > query.limit && last ? { deliveries, nextCursor: last.id } : { deliveries };
  }

  /**
   * A page of the log from its two sources: the query of own documents and the destination's
   * group members that could be on it, each delivery once and as it stands. A grouped one with
   * a document of its own is shown as that says (read for it), and left off if that fails the
   * filter (only a delivery sent twice at once has both; the page may then end a row early).
   */
  async log(destinationId: string, query: DeliveryLogQuery): Promise<DeliveryPage> {
    const want = query.limit + 1;
    const own = await this.ownLog(destinationId, query, want);
    const grouped = await this.groups.logMembers(
      destinationId,
      query,
      want,
      own.map((r) => r.publishedAt ?? ''),
    );
    const ownById = new Map(own.map((r) => [r.id, r]));
    // Every copy of each grouped row was read with it (logMembers): no lookup of copies by id.
    const copies = new Map<string, DeliveryRecord[]>();
    for (const m of grouped) copies.set(m.id, [...(copies.get(m.id) ?? []), m]);
    const seen = new Set<string>();
    const candidates = [...own, ...grouped].sort(logOrder).filter((r) => !seen.has(r.id) && seen.add(r.id));
    const rows: DeliveryRecord[] = [];
    for (let from = 0; from < candidates.length && rows.length < want; from += want) {
      const standingNow = await this.standingRows(
        candidates.slice(from, from + want).map((r) => r.id),
        ownById,
        copies,
      );
      rows.push(...standingNow.filter((r) => inLog(r, { ...query, cursor: undefined })));
    }
    return logPage(rows.sort(logOrder), query.limit);
  }

  private async ownLog(destinationId: string, query: DeliveryLogQuery, want: number): Promise<DeliveryRecord[]> {
    let q = this.col.where('destinationId', '==', destinationId);
    // An event id names one or two records: the other filters are applied to them here, not by an index each.
    if (query.eventId !== undefined) q = q.where('eventId', '==', query.eventId);
    else {
      if (query.status !== undefined) q = q.where('status', '==', query.status);
      if (query.eventType !== undefined) q = q.where('eventType', '==', query.eventType);
    }
    if (query.from !== undefined) q = q.where('publishedAt', '>=', query.from);
    if (query.to !== undefined) q = q.where('publishedAt', '<', query.to);
    q = q.orderBy('publishedAt', 'desc').orderBy(FieldPath.documentId(), 'desc');
    if (query.cursor !== undefined) q = q.startAfter(query.cursor.publishedAt, query.cursor.id);
    // The page's rows without the event's bytes and the attempts' detail (GET …/deliveries/{id} has them).
    const snap = await q.select(...LOG_FIELDS, 'groupCopies').limit(want).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => fromOwn(d.data())).filter((r) => inLog(r, { ...query, cursor: undefined }));
  }

  /**
   * Rows as they stand, each delivery once: their group copies (those read with the rows, or
   * looked up: a read per group found) and, for rows not read from their own documents, those
   * documents (a read each).
   */
  private async standingRows(ids: readonly string[], known: ReadonlyMap<string, Own>, copiesRead?: ReadonlyMap<string, DeliveryRecord[]>): Promise<DeliveryRecord[]> {
    // A row with a document of its own read already (`known`) and no copy read stands as that document.
    const unread = ids.filter((id) => !known.has(id));
    const [owns, copies] = await Promise.all([this.ownDocs(unread), copiesRead ? Promise.resolve(copiesRead) : this.groups.copies(ids)]);
    return ids.flatMap((id) => {
      const row = standing(known.get(id) ?? owns.get(id), copies.get(id) ?? []);
      return row ? [withoutDetail(row)] : [];
    });
  }
  /**
   * Rows by the ids a log head names (domain/delivery/grouped-outcomes.ts headEntryId): a grouped one read
   * from the groups the entry names (a read per group) and, as every row, its own document (a read
   * each), which stands if there is one: no query.
   */
  async logRows(entryIds: readonly string[]): Promise<DeliveryRecord[]> {
    const entries = entryIds.map(parseHeadEntryId);
    const [owns, copies] = await Promise.all([this.ownDocs(entries.map((e) => e.id)), this.groups.byGroup(entries.flatMap((e) => e.groups))]);
    return entries.flatMap(({ id }) => {
      const row = standing(owns.get(id), copies.get(id) ?? []);
      return row ? [withoutDetail(row)] : [];
    });
  }

  /**
   * The distinct deliveries from intake batch `intake` for `destinationIds`: one aggregation of
   * its own documents (their count and the sum of their `intakeTally`, billed a read per 1,000)
   * per 30 destinations, and its group members (a read per group) that have no document of
   * their own (a read each: few).
   */
  async tallyFromIntake(intake: string, destinationIds: readonly string[], expected?: IntakeTally): Promise<IntakeTally> {
    const wanted = new Set(destinationIds);
    const grouped = (await this.groups.fromIntakes([intake])).filter((m) => wanted.has(m.destinationId));
    let total = EMPTY_TALLY;
    for (const part of chunks(destinationIds, IN_LIMIT)) total = addTallies(total, await this.aggregateTally(this.col.where('intake', '==', intake).where('destinationId', 'in', part)));
    return this.withGrouped(total, grouped, expected);
  }

  async fromIntake(intake: string, destinationIds: readonly string[]): Promise<Set<string>> {
    const wanted = new Set(destinationIds);
    const ids = new Set((await this.groups.fromIntakes([intake])).filter((m) => wanted.has(m.destinationId)).map((m) => m.id));
    for (const part of chunks(destinationIds, IN_LIMIT)) {
      const snap = await this.col.where('intake', '==', intake).where('destinationId', 'in', part).select().get();
      this.ops.reads += Math.max(1, snap.size);
      for (const doc of snap.docs) ids.add(doc.id);
    }
    return ids;
  }

  /**
   * The distinct deliveries from these intake batches: one aggregation of own documents over
   * the batches' id range (a record of another batch whose id lies between them is in it), and
   * the batches' group members without a document of their own.
   */
  async tallyFromIntakes(intakes: readonly string[], expected?: IntakeTally): Promise<IntakeTally> {
    if (intakes.length === 0) return EMPTY_TALLY;
    const sorted = [...intakes].sort();
    const [grouped, own] = await Promise.all([
      this.groups.fromIntakes(sorted),
      this.aggregateTally(this.col.where('intake', '>=', sorted[0]!).where('intake', '<=', sorted[sorted.length - 1]!)),
    ]);
    return this.withGrouped(own, grouped, expected);
  }

  /**
   * Own documents' tally and the group members': counted whole first when the caller says what it
   * expects (a batch's events are all group members, and reading each one's own document to rule
   * out a second copy cost a read per event), exactly when that does not make it.
   */
  private async withGrouped(own: IntakeTally, grouped: readonly DeliveryRecord[], expected: IntakeTally | undefined): Promise<IntakeTally> {
    if (expected !== undefined) {
      const whole = addTallies(own, tallyOf(new Set(grouped.map((m) => m.id))));
      if (sameTally(whole, expected)) return whole;
    }
    return addTallies(own, await this.withoutOwn(grouped));
  }

  /** Count and tally sum of the query's documents, as one aggregation (billed as a count: a read per 1,000). */
  private async aggregateTally(query: Query): Promise<IntakeTally> {
    const snap = await query.aggregate({ count: AggregateField.count(), sum: AggregateField.sum(TALLY_FIELD) }).get();
    const { count, sum } = snap.data();
    this.ops.reads += Math.max(1, Math.ceil(count / 1000));
    return { count, sum: sum ?? 0 };
  }

  /** The distinct deliveries among group members that have no document of their own (tallied by aggregation already). */
  private async withoutOwn(members: readonly DeliveryRecord[]): Promise<IntakeTally> {
    const ids = [...new Set(members.map((m) => m.id))];
    if (ids.length === 0) return EMPTY_TALLY;
    const owns = await this.ownDocs(ids);
    return tallyOf(ids.filter((id) => !owns.has(id)));
  }
  /** Of statuses never grouped: own documents only. */
  async countByStatus(destinationIds: readonly string[], status: WorkStatus): Promise<number> {
    // The equality fields of byDestinationAndStatus: its composite index serves the count.
    const [destination, statusField] = FIRESTORE_QUERIES.byDestinationAndStatus.equality;
    const counts = await Promise.all(chunks(destinationIds, IN_LIMIT).map((ids) => this.col.where(destination, 'in', ids).where(statusField, '==', status).count().get()));
    const total = counts.reduce((sum, snap) => sum + snap.data().count, 0);
    this.ops.reads += counts.reduce((sum, snap) => sum + Math.max(1, Math.ceil(snap.data().count / 1000)), 0);
    return total;
  }

  async deadLettersOwed(before: Date, limit: number): Promise<string[]> {
    const field = FIRESTORE_QUERIES.owedDeadLetters.orderBy;
    const snap = await this.col.where(field, '<=', before.toISOString()).orderBy(field).limit(limit).select().get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.id);
  }
}

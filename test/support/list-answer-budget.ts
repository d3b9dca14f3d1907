import { randomBytes } from 'node:crypto';
import { LIST_ANSWER_MAX_BYTES } from '../../shared/app/admin/answer-budget';
import { listAccountDeliveries } from '../../shared/app/admin/account-deliveries-admin';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { deliveryId, DeliveryRecord } from '../../shared/domain/retry/delivery';
import { HeraldEvent } from '../../shared/domain/events/event';
import { internalDestinationId } from '../../shared/domain/ids';
import { DeliveryStore } from '../../shared/ports/deliveries';

/**
 * Issue 50: `GET /admin/accounts/{id}/deliveries?limit=500` handed back every queued event
 * inline, up to 256 KiB each: ~170 MB in one answer, for any read key. A page now stops at
 * LIST_ANSWER_MAX_BYTES with a cursor for the rest, and paging still brings every row once.
 * One behaviour, both stores: memory's in a unit test, Firestore's on the emulator.
 */
export function listAnswerBudgetSuite(name: string, make: () => Promise<DeliveryStore>): void {
  describe(`the account's queued deliveries stay within the answer's byte budget (${name} store)`, () => {
    const at = new Date('2026-11-26T09:00:00.000Z');
    const account = 'acme';
    const event = (id: string, bytes: number): HeraldEvent => ({
      attributes: { specversion: '1.0', id, source: '/shop', type: 'com.example.order.created', heraldaccount: account },
      data: Buffer.from(JSON.stringify({ pad: randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64').slice(0, bytes) })),
    });
    const queued = (destination: string, key: string, bytes: number): DeliveryRecord => {
      const destinationId = internalDestinationId(account, destination);
      return { id: deliveryId(destinationId, key), destinationId, eventId: key, eventSource: '/shop', eventType: 'com.example.order.created', status: 'QUEUED', attempts: 3, publishedAt: at.toISOString(), event: event(key, bytes) };
    };

    async function world(records: DeliveryRecord[]) {
      const destinations = new MemoryDestinationStore();
      for (const d of ['orders', 'refunds']) {
        await destinations.put(applySpec(internalDestinationId(account, d), destinationSpecSchema.parse({ url: `https://hooks.example.com/${d}`, eventTypes: ['*'] }), undefined, at));
      }
      const deliveries = await make();
      for (const r of records) await deliveries.put(r);
      return { destinations, deliveries };
    }

    async function page(deps: Awaited<ReturnType<typeof world>>, query: Record<string, string>) {
      const answer = await listAccountDeliveries(deps, account, query);
      if (answer.kind !== 'ok') throw new Error(`expected ok, got ${JSON.stringify(answer)}`);
      return { body: answer.body, bytes: Buffer.byteLength(JSON.stringify(answer.body)) };
    }

    test('limit=500 over 8 MB of queued events: pages within the budget, every delivery once', async () => {
      // 40 events of ~200 KiB over two destinations: ~8 MB in all, twice the budget.
      const records = [...Array.from({ length: 24 }, (_, i) => queued('orders', `o${String(i).padStart(2, '0')}`, 200 * 1024)), ...Array.from({ length: 16 }, (_, i) => queued('refunds', `r${String(i).padStart(2, '0')}`, 200 * 1024))];
      const deps = await world(records);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const { body, bytes } = await page(deps, { limit: '500', ...(cursor ? { cursor } : {}) });
        expect(bytes).toBeLessThanOrEqual(LIST_ANSWER_MAX_BYTES + 1024);
        expect(body.deliveries.length).toBeGreaterThan(0);
        // Each row still carries its whole event.
        for (const d of body.deliveries) expect((d.event as { data: { pad: string } }).data.pad).toHaveLength(200 * 1024);
        seen.push(...body.deliveries.map((d) => d.id));
        cursor = body.nextCursor;
        pages++;
      } while (cursor !== undefined && pages < 10);
      expect(pages).toBeGreaterThanOrEqual(2);
      expect(seen).toEqual(records.map((r) => r.id).sort());
    });

    test('a page smaller than the budget is the whole limit; one 256 KiB event always fits', async () => {
      const records = [queued('orders', 'big', 256 * 1024), ...Array.from({ length: 5 }, (_, i) => queued('orders', `s${i}`, 1024))];
      const deps = await world(records);
      const first = await page(deps, { limit: '3' });
      expect(first.body.deliveries.map((d) => d.id)).toEqual(records.map((r) => r.id).sort().slice(0, 3));
      const rest = await page(deps, { limit: '500', cursor: first.body.nextCursor! });
      expect(rest.body.deliveries.map((d) => d.id)).toEqual(records.map((r) => r.id).sort().slice(3));
      expect(rest.body.nextCursor).toBeUndefined();
    });
  });
}

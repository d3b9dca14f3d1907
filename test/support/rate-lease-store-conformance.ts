import { lease, LeaseRequest } from '../../shared/domain/rate/rate-control';
import { RATE_LIMITS, RateDoc } from '../../shared/domain/rate/rate-doc';
import { RateLeaseStore } from '../../shared/ports/rate';
import { contractSuite } from './contract-suite';

const T0 = Date.parse('2026-11-25T12:00:00.000Z');

function request(holder: string, now: number, extra: Partial<LeaseRequest> = {}): LeaseRequest {
  return { holder, backlog: 5, feedback: { seconds: {} }, bounds: RATE_LIMITS, now, ...extra };
}

/** RateLeaseStore's contract (shared/ports/rate.ts), every implementation: Firestore's on the emulator, memory's in unit tests. */
export function rateLeaseStoreConformance(name: string, make: () => Promise<RateLeaseStore> | RateLeaseStore): void {
  contractSuite(`${name} rate-lease store`, make, (store) => {
    test('a lease is the domain rule applied to the stored controller: the same leases as the rule alone, in order', async () => {
      expect(await store.peek('acme_orders')).toBeUndefined();
      const requests = [
        request('a', T0),
        request('b', T0 + 300),
        // Feedback: a second of sends, most of them throttled, then a 429's pause.
        request('a', T0 + 1_200, { feedback: { seconds: { [String(Math.floor(T0 / 1000))]: { sent: 10, ok: 2, throttled: 8 } } } }),
        request('b', T0 + 1_500, { feedback: { seconds: {}, pauseUntil: T0 + 5_000 }, backlog: 0 }),
      ];
      let doc: RateDoc | undefined;
      for (const r of requests) {
        const expected = lease(doc, r);
        doc = expected.doc;
        expect(await store.lease('acme_orders', r)).toEqual(expected.lease);
      }
      const stored = await store.peek('acme_orders');
      expect(stored?.state).toEqual(doc!.state);
      expect(Object.keys(stored!.holders).sort()).toEqual(['a', 'b']);
    });

    test("each destination has its own controller; peek changes nothing", async () => {
      await store.lease('acme_orders', request('a', T0));
      expect(await store.peek('acme_billing')).toBeUndefined();
      const before = await store.peek('acme_orders');
      expect(await store.peek('acme_orders')).toEqual(before);
      expect(Object.keys(before!.holders)).toEqual(['a']);
    });

    test('leases at once from many senders are each applied: none is lost', async () => {
      await Promise.all(Array.from({ length: 5 }, (_, i) => store.lease('acme_orders', request(`h${i}`, T0 + i))));
      expect(Object.keys((await store.peek('acme_orders'))!.holders).sort()).toEqual(['h0', 'h1', 'h2', 'h3', 'h4']);
    });
  });
}

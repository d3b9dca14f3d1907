import { listEventTypes } from '../../shared/app/admin/event-types-admin';
import type { Destination } from '../../shared/domain/destinations/destination';
import { internalDestinationId } from '../../shared/domain/ids';
import type { RateSummary } from '../../shared/domain/stats/success-rate';

/** GET …/event-types: destinations by type, those that filter named apart with their counts, read in one counter read. */
const ACCOUNT = 'acme';
const dest = (id: string, eventTypes: string[], filter?: string) => ({ id: internalDestinationId(ACCOUNT, id), eventTypes, ...(filter ? { filter } : {}) }) as unknown as Destination;
const sample = (type: string) => ({ account: ACCOUNT, type, lastSeenAt: '2026-12-06T20:00:00.000Z', sample: { type } });

function deps(destinations: Destination[], hour: Record<string, Partial<RateSummary>> = {}) {
  const reads: string[][] = [];
  return {
    reads,
    deps: {
      destinations: { listAccount: () => Promise.resolve(destinations) },
      eventTypes: { list: () => Promise.resolve([sample('order.created'), sample('order.cancelled')]) },
      counters: {
        hourMs: 3_600_000,
        windows: (asked: readonly { destinationId: string; windowMs: number }[]) => {
          reads.push(asked.map((a) => a.destinationId));
          return Promise.resolve(new Map(asked.map((a) => [a.destinationId, { attempts: 0, successes: 0, failures: 0, recentErrors: [], ...hour[a.destinationId] } as RateSummary])));
        },
      },
    },
  };
}

test('every destination subscribed by type is listed; those with a filter are named with its counts, read once for all', async () => {
  const { deps: d, reads } = deps([dest('all', ['order.*']), dest('big', ['order.created'], 'data.amount > 1000'), dest('eu', ['order.*'], 'ce.region == "eu"')], {
    [internalDestinationId(ACCOUNT, 'big')]: { settled: { filterPassed: 3, filtered: 7 } },
  });
  const res = await listEventTypes(d, ACCOUNT);
  if (res.kind !== 'ok') throw new Error(res.kind);
  const [created, cancelled] = res.body.eventTypes;
  expect(created).toMatchObject({
    type: 'order.created',
    destinations: ['all', 'big', 'eu'],
    filtered: [
      { destination: 'big', filter: 'data.amount > 1000', filterPassed1h: 3, filtered1h: 7, filterErrors1h: 0 },
      { destination: 'eu', filter: 'ce.region == "eu"', filterPassed1h: 0, filtered1h: 0, filterErrors1h: 0 },
    ],
  });
  expect(cancelled).toMatchObject({ type: 'order.cancelled', destinations: ['all', 'eu'], filtered: [{ destination: 'eu' }] });
  expect(reads).toEqual([[internalDestinationId(ACCOUNT, 'big'), internalDestinationId(ACCOUNT, 'eu')]]);
});

test('no filtering destination: no counter read', async () => {
  const { deps: d, reads } = deps([dest('all', ['order.*'])]);
  const res = await listEventTypes(d, ACCOUNT);
  expect(res.kind === 'ok' && res.body.eventTypes.map((t) => [t.type, t.destinations, t.filtered])).toEqual([
    ['order.created', ['all'], []],
    ['order.cancelled', ['all'], []],
  ]);
  expect(reads).toEqual([]);
});

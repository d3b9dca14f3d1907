import { AccountPolicies } from '../../shared/app/access/account-policies';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { DestinationFilters } from '../../shared/app/destinations/destination-filters';
import { ingest, IngestDeps } from '../../shared/app/intake/ingest';
import { IntakeJournal } from '../../shared/app/intake/intake-journal';
import { PublishQuotas } from '../../shared/app/intake/publish-quotas';
import { routeEvent, RouteDeps } from '../../shared/app/intake/route';
import { MemoryAccountStore } from '../../shared/adapters/memory/account-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { MemoryQuotaStore } from '../../shared/adapters/memory/quota-store';
import { Account } from '../../shared/domain/access/account';
import { PubSubMessage, PushDelivery } from '../../shared/domain/events/cloudevents-pubsub';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { internalDestinationId } from '../../shared/domain/ids';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { createLogger } from '../../shared/log';

/**
 * Issue 50: under the ingest token a batch could name thousands of `heraldaccount` values,
 * each of which got a publish bucket of its own (past any quota) and catalogue documents for
 * accounts that do not exist. Such events are now refused (400; a dead letter at `route`),
 * from the accounts cache the quotas read anyway.
 */

const at = new Date('2026-11-26T09:00:00.000Z');
const clock = { now: () => at };
const BATCH = { 'content-type': 'application/cloudevents-batch+json' };
const batch = (events: { id: string; heraldaccount?: string }[]) =>
  Buffer.from(JSON.stringify(events.map((e) => ({ specversion: '1.0', source: '/shop', type: 'com.example.order.created', data: {}, ...e }))));

async function world(quota = 0) {
  const accounts = new MemoryAccountStore();
  let reads = 0;
  const counted = { get: (id: string) => (reads++, accounts.get(id)) };
  for (const id of ['acme', 'globex']) await accounts.create({ id, name: id, createdAt: at.toISOString() } as Account);
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec(internalDestinationId('acme', 'orders'), destinationSpecSchema.parse({ url: 'https://hooks.example.com/orders', eventTypes: ['*'] }), undefined, at));
  const log = createLogger({ level: 'ERROR', write: () => undefined });
  const policies = new AccountPolicies(counted, clock, log, 10_000, { publishPerSecond: quota, destinations: 0 });
  const published: { topic: string; message: PubSubMessage }[] = [];
  const intake = new MemoryIntakeStore();
  const bus = { publish: async (topic: string, message: PubSubMessage) => String(published.push({ topic, message })) };
  const directory = new DestinationDirectory(destinations, clock, 10_000);
  const deps: IngestDeps = {
    bus,
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    names: { prefix: 'herald' },
    directory,
    journal: new IntakeJournal(intake, clock),
    clock,
    log,
    maxBodyBytes: 10_000_000,
    maxEventBytes: 10_000,
    quotas: new PublishQuotas(new MemoryQuotaStore(), (a) => policies.quotasOf(a), clock, log),
    accounts: policies,
  };
  return { deps, published, intake, reads: () => reads, policies, bus, directory, log, destinations };
}

describe('ingest under the ingest token', () => {
  test('an event naming an account that does not exist: 400 naming its path and the account, nothing journaled or published', async () => {
    const { deps, published, intake } = await world();
    const result = await ingest(deps, BATCH, batch([{ id: 'e1', heraldaccount: 'acme' }, { id: 'e2', heraldaccount: 'ghost' }, { id: 'e3' }, { id: 'e4', heraldaccount: 'ghost' }]));
    expect(result).toEqual({
      kind: 'invalid',
      body: {
        error: 'events name an account that does not exist ("ghost"); nothing accepted: correct heraldaccount, or create the account first (POST /admin/accounts)',
        issues: [
          { path: '[1].heraldaccount', message: 'no account "ghost"' },
          { path: '[3].heraldaccount', message: 'no account "ghost"' },
        ],
      },
    });
    expect(intake.writes).toEqual([]);
    expect(published).toEqual([]);
  });

  test('thousands of made-up accounts: refused, each account read once, and not again while cached', async () => {
    const { deps, reads, intake } = await world(1);
    const events = Array.from({ length: 2_000 }, (_, i) => ({ id: `e${i}`, heraldaccount: `made-up-${i}` }));
    const result = await ingest(deps, BATCH, batch(events));
    expect(result.kind).toBe('invalid');
    expect((result.body as { issues: unknown[] }).issues).toHaveLength(2_000);
    expect(reads()).toBe(2_000);
    expect((await ingest(deps, BATCH, batch(events))).kind).toBe('invalid');
    expect(reads()).toBe(2_000);
    expect(intake.writes).toEqual([]);
  });

  test("every account named is charged: one over its quota refuses the batch, as for a key", async () => {
    const { deps } = await world(2);
    expect(await ingest(deps, BATCH, batch([{ id: 'a1', heraldaccount: 'acme' }, { id: 'g1', heraldaccount: 'globex' }]))).toEqual({ kind: 'accepted', body: { accepted: ['a1', 'g1'] } });
    const over = await ingest(deps, BATCH, batch([{ id: 'a2', heraldaccount: 'acme' }, { id: 'g2', heraldaccount: 'globex' }, { id: 'g3', heraldaccount: 'globex' }]));
    expect(over).toMatchObject({ kind: 'too-many', body: { issues: [{ path: 'heraldaccount', message: 'globex: over 2 events/s' }] } });
  });

  test('an event of an existing account, or of none (default), is accepted', async () => {
    const { deps, published } = await world();
    expect(await ingest(deps, BATCH, batch([{ id: 'e1', heraldaccount: 'acme' }, { id: 'e2' }]))).toEqual({ kind: 'accepted', body: { accepted: ['e1', 'e2'] } });
    expect(published.map((p) => p.message.attributes['ce-id'])).toEqual(['e1']);
  });
});

describe('route (events published straight to the events topic)', () => {
  const push = (id: string, heraldaccount?: string): PushDelivery => ({
    subscription: 'projects/p/subscriptions/herald-route',
    messageId: `m-${id}`,
    publishTime: at,
    message: { data: Buffer.from('{}'), attributes: { 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': '/shop', 'ce-type': 'com.example.order.created', 'content-type': 'application/json', ...(heraldaccount ? { heraldaccount } : {}) } },
  });

  async function routeWorld() {
    const w = await world();
    const deps: RouteDeps = { bus: w.bus, lanes: w.deps.lanes, directory: w.directory, log: w.log, names: { prefix: 'herald' }, deadLetterTopic: 'herald-dead-letter', accounts: w.policies };
    return { ...w, deps };
  }

  test("an unknown account's event is a dead letter saying so, and goes nowhere else", async () => {
    const { deps, published } = await routeWorld();
    const outcome = await routeEvent(deps, push('r1', 'ghost'));
    expect(outcome).toMatchObject({ kind: 'invalid', issues: [{ path: 'attributes.heraldaccount', message: expect.stringMatching(/^no account "ghost"/) }] });
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ topic: 'herald-dead-letter', message: { attributes: { 'herald-reason': 'unknown-account', heraldaccount: 'ghost', 'ce-id': 'r1' } } });
  });

  test("an existing account's event is routed to its destinations", async () => {
    const { deps, published } = await routeWorld();
    expect(await routeEvent(deps, push('r2', 'acme'))).toEqual({ kind: 'routed', destinations: [internalDestinationId('acme', 'orders')] });
    expect(published.every((p) => p.topic !== 'herald-dead-letter')).toBe(true);
  });

  test("a destination's filter applies here as at ingest: a dropped event is published nowhere, and counted", async () => {
    const { deps, published, destinations } = await routeWorld();
    const big = internalDestinationId('acme', 'big');
    const spec = destinationSpecSchema.parse({ url: 'https://hooks.example.com/big', filter: 'data.amount > 1000 && ce.siteid == "42"' });
    await destinations.put(applySpec(big, spec, undefined, at));
    const counted: [string, object][] = [];
    const filters = new DestinationFilters({ tally: { filterCounted: (id, c) => counted.push([id, c]) }, clock, log: deps.log });
    const order = (id: string, amount: number, siteid: string): PushDelivery => {
      const p = push(id, 'acme');
      return { ...p, message: { data: Buffer.from(JSON.stringify({ amount })), attributes: { ...p.message.attributes, 'ce-siteid': siteid } } };
    };
    expect(await routeEvent({ ...deps, filters }, order('small', 10, '42'))).toEqual({ kind: 'routed', destinations: [internalDestinationId('acme', 'orders')] });
    expect(await routeEvent({ ...deps, filters }, order('large', 5000, '42'))).toEqual({ kind: 'routed', destinations: [big, internalDestinationId('acme', 'orders')].sort() });
    expect(await routeEvent({ ...deps, filters }, order('other-site', 5000, '7'))).toEqual({ kind: 'routed', destinations: [internalDestinationId('acme', 'orders')] });
    // One lane message for `big`: the large order of site 42.
    expect(published.filter((p) => p.message.attributes[`herald-${LANE_ATTRIBUTES.destination}`] === big).map((p) => p.message.attributes['ce-id'])).toEqual(['large']);
    expect(counted).toEqual([
      [big, { filtered: 1 }],
      [big, { filterPassed: 1 }],
      [big, { filtered: 1 }],
    ]);
  });
});

import { deliveriesTable } from '../../apps/cli/commands/deliveries';
import { destinationSummary } from '../../apps/cli/commands/destination-summary';
import { orderingFromFlags } from '../../apps/cli/ordering-flags';
import type { DeliveryView } from '../../shared/app/admin/deliveries-admin';
import type { DestinationInfo } from '../../apps/cli/client';
import { PARKED_AT } from '../../shared/domain/modes/ordering';
import { harness } from '../support/cli-harness';

/** `destinations add --ordering*`, `destinations blocked-keys|skip-key` (issue 38): what is sent, what is refused before sending, and where the setting shows. */

const ADD = ['destinations', 'add', 'ledger', '--url', 'https://l.example/hook'];

/** A server that echoes the spec back as the destination it made. */
const echo = () => harness((req) => Response.json({ id: 'ledger', status: 'active', eventTypes: [], policy: 'event-platform', ...(JSON.parse(req.body!.toString()) as object) }, { status: 201 }));

const sentSpec = (h: ReturnType<typeof harness>) => JSON.parse(h.sent[0]!.body!.toString()) as Record<string, unknown>;

describe('destinations add --ordering: what is sent', () => {
  test.each([
    [['--ordering', 'key'], { by: 'key', onFailure: 'skip' }],
    [['--ordering', 'key', '--ordering-on-failure', 'skip'], { by: 'key', onFailure: 'skip' }],
    [['--ordering', 'key', '--ordering-on-failure', 'block'], { by: 'key', onFailure: 'block' }],
  ])('%j → %j', async (flags, ordering) => {
    const h = echo();
    expect(await h.run([...ADD, ...flags])).toBe(0);
    expect(sentSpec(h)).toEqual({ url: 'https://l.example/hook', ordering });
  });

  test('without the flags the spec has no ordering: adding the id again turns it off', async () => {
    const h = echo();
    expect(await h.run(ADD)).toBe(0);
    expect(sentSpec(h)).not.toHaveProperty('ordering');
    expect(orderingFromFlags({})).toEqual({ ok: true });
  });

  test('--help names the flags and the commands that release a key', async () => {
    const h = harness();
    expect(await h.run(['destinations', 'add', '--help'])).toBe(0);
    expect(h.stdout()).toContain('--ordering <key>');
    expect(h.stdout()).toContain('--ordering-on-failure <skip|block>');
    expect(h.stdout()).toContain('blocked-keys and skip-key');
  });
});

describe('destinations add --ordering: refused before sending (exit 2), by flag', () => {
  async function refused(args: string[]): Promise<string> {
    const h = harness();
    expect(await h.run([...ADD, ...args])).toBe(2);
    expect(h.sent).toHaveLength(0);
    return h.stderr();
  }

  test.each([
    [['--ordering', 'time'], '  - --ordering: takes one value, key: events are ordered per partitionkey (leave the flag out for no ordering)\n'],
    [['--ordering', 'key', '--ordering-on-failure', 'wait'], '  - --ordering-on-failure: must be "skip" or "block"\n'],
    [['--ordering-on-failure', 'block'], '  - --ordering-on-failure: is only meaningful with --ordering key: add it, or leave both out for no ordering\n'],
    [['--ordering', 'key', '--batch-max-events', '10', '--batch-max-wait-ms', '500'], '  - --ordering: cannot go with the --batch-* flags: a batch is sent as a unit, an ordered key one event at a time; choose one\n'],
  ])('%j', async (args, line) => {
    const err = await refused(args);
    expect(err).toContain(line);
    expect(err.match(/^ {2}- /gm)).toHaveLength(1);
  });

  test("every problem at once: the spec's and the ordering flags'", async () => {
    const err = await refused(['--url', 'not a url', '--ordering', 'KEY', '--ordering-on-failure', 'never']);
    expect(err).toContain('  - --url: must be an absolute URL');
    expect(err).toContain('  - --ordering: takes one value, key');
    expect(err).toContain('  - --ordering-on-failure: must be "skip" or "block"');
  });
});

describe('destinations blocked-keys and skip-key', () => {
  const held = { key: 'customer-42', seq: 3, deliveryId: 'ledger.k3', eventId: 'evt-3', status: 'DEAD', why: 'block', since: '2026-11-27T10:00:00.000Z' };

  test('blocked-keys: GET …/ordered-keys/blocked, a table, and how to release a key', async () => {
    const h = harness(() => Response.json({ keys: [held, { ...held, key: 'c-7', deliveryId: 'ledger.k9', eventId: 'evt-9', status: 'QUEUED', why: 'suspended' }] }));
    expect(await h.run(['destinations', 'blocked-keys', 'ledger', '--account', 'acme'])).toBe(0);
    expect(h.sent[0]).toMatchObject({ method: 'GET', url: 'http://127.0.0.1:8080/admin/accounts/acme/destinations/ledger/ordered-keys/blocked' });
    expect(h.stdout()).toBe(
      [
        'KEY          STATUS  HELD       SINCE                     EVENT ID  DELIVERY ID',
        'customer-42  DEAD    block      2026-11-27T10:00:00.000Z  evt-3     ledger.k3',
        'c-7          QUEUED  suspended  2026-11-27T10:00:00.000Z  evt-9     ledger.k9',
        '',
      ].join('\n'),
    );
    expect(h.stderr()).toContain('release a key: herald destinations skip-key ledger <key> --account acme');
    expect(h.stderr()).toContain('DEAD: herald destinations redeliver ledger --account acme --dead');
  });

  test('blocked-keys: none held is a note; --json the array', async () => {
    const none = harness(() => Response.json({ keys: [] }));
    expect(await none.run(['destinations', 'blocked-keys', 'ledger'])).toBe(0);
    expect(none.stdout()).toBe('');
    expect(none.stderr()).toBe('no key of ledger is held\n');
    const json = harness(() => Response.json({ keys: [held] }));
    expect(await json.run(['destinations', 'blocked-keys', 'ledger', '--json'])).toBe(0);
    expect(JSON.parse(json.stdout())).toEqual([held]);
  });

  test('skip-key: POST {"key"}, a line saying what the key moved past', async () => {
    const { why: _why, since: _since, ...skipped } = held;
    const h = harness(() => Response.json({ skipped }));
    expect(await h.run(['destinations', 'skip-key', 'ledger', 'customer-42'])).toBe(0);
    expect(h.sent[0]).toMatchObject({ method: 'POST', url: 'http://127.0.0.1:8080/admin/destinations/ledger/ordered-keys/skip' });
    expect(JSON.parse(h.sent[0]!.body!.toString())).toEqual({ key: 'customer-42' });
    expect(h.stdout()).toBe('ledger: key "customer-42" moved past event evt-3 (DEAD, place 3); its next event is on its way\n');
  });

  test('skip-key: a key not held is exit 1, with where to see the held ones; an unknown destination says how to list them', async () => {
    const notHeld = harness(() => Response.json({ error: 'key "x" of destination "ledger" is not held: nothing to skip' }, { status: 409 }));
    expect(await notHeld.run(['destinations', 'skip-key', 'ledger', 'x'])).toBe(1);
    expect(notHeld.stderr()).toContain('key "x" of destination "ledger" is not held');
    expect(notHeld.stderr()).toContain('hint: see the held keys with: herald destinations blocked-keys ledger\n');
    const missing = harness(() => Response.json({ error: 'no destination "nope"' }, { status: 404 }));
    expect(await missing.run(['destinations', 'skip-key', 'nope', 'x'])).toBe(1);
    expect(missing.stderr()).toContain('hint: see the destinations there are with: herald destinations list');
  });

  test.each([
    ['', '  - <key>: must not be empty'],
    ['k'.repeat(257), '  - <key>: is at most 256 characters, as partition keys are'],
  ])('skip-key with key %j is refused before sending', async (key, line) => {
    const h = harness();
    expect(await h.run(['destinations', 'skip-key', 'ledger', key])).toBe(2);
    expect(h.sent).toHaveLength(0);
    expect(h.stderr()).toContain(line);
  });
});

describe('where the CLI shows the setting', () => {
  const base = { eventTypes: [] as string[], policy: 'event-platform' as const, status: 'active' as const, createdAt: 't', updatedAt: 't' };

  test('destinations list: an ORDERING column once one destination is ordered', async () => {
    const destinations = [
      { ...base, id: 'ledger', url: 'https://l.example/hook', failureMode: 'retry', ordering: { by: 'key', onFailure: 'block' } },
      { ...base, id: 'one', url: 'https://o.example/hook', failureMode: 'retry' },
    ];
    const h = harness(() => Response.json({ destinations }));
    expect(await h.run(['destinations', 'list'])).toBe(0);
    expect(h.stdout().split('\n').slice(0, 3)).toEqual([
      'ID      STATUS  POLICY          ON FAILURE  EVENT TYPES  ORDERING    TARGET',
      'ledger  active  event-platform  retry       (all)        key, block  https://l.example/hook',
      'one     active  event-platform  retry       (all)        -           https://o.example/hook',
    ]);
  });

  test('destinations show: a summary line when ordered', () => {
    const d: DestinationInfo = { ...base, id: 'ledger', account: 'default', url: 'https://l.example/hook', ordering: { by: 'key', onFailure: 'block' } };
    expect(destinationSummary(d)).toContain(
      '  sends events with the same partitionkey one at a time, in the order accepted; a key whose event ends DEAD or QUEUED is held until that event is redelivered or the key skipped (herald destinations blocked-keys)',
    );
    const { ordering: _ordering, ...unordered } = d;
    expect(destinationSummary(unordered).join('\n')).not.toContain('partitionkey');
  });

  test("deliveries list: an ORDER column (key #place) once one delivery is ordered; a parked one waits for its key", () => {
    const view = (n: number, order?: DeliveryView['order'], availableAt = 'at'): DeliveryView =>
      ({ id: `ledger.k${n}`, destinationId: 'ledger', account: 'default', eventId: `e${n}`, eventSource: '/s', eventType: 't', status: 'PENDING', attempts: 0, availableAt, ...(order ? { order } : {}) }) as DeliveryView;
    expect(deliveriesTable([view(1)]).split('\n')[0]).not.toContain('ORDER');
    expect(deliveriesTable([view(1, { key: 'c-7', seq: 1 }), view(2, { key: 'c-7', seq: 2 }, PARKED_AT), view(3)])).toBe(
      [
        'DELIVERY ID  EVENT ID  TYPE  STATUS   ATTEMPTS  LAST ERROR  ORDER   AVAILABLE AT',
        'ledger.k1    e1        t     PENDING  0         -           c-7 #1  at',
        "ledger.k2    e2        t     PENDING  0         -           c-7 #2  (after its key's earlier events)",
        'ledger.k3    e3        t     PENDING  0         -           -       at',
      ].join('\n'),
    );
  });
});

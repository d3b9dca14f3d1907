import { batchFromFlags, batchSentence } from '../../apps/cli/batch-flags';
import { deliveriesTable } from '../../apps/cli/commands/deliveries';
import { destinationSummary } from '../../apps/cli/commands/destination-summary';
import type { DeliveryView } from '../../shared/app/admin/deliveries-admin';
import type { DestinationInfo } from '../../apps/cli/client';
import { harness } from '../support/cli-harness';

/** `destinations add --batch-*` (issue 37): what is sent, what is refused before sending, and where the setting shows. */

const ADD = ['destinations', 'add', 'bulk', '--url', 'https://b.example/hook'];

/** A server that echoes the spec back as the destination it made. */
const echo = () => harness((req) => Response.json({ id: 'bulk', status: 'active', eventTypes: [], policy: 'event-platform', ...(JSON.parse(req.body!.toString()) as object) }, { status: 201 }));

const sentSpec = (h: ReturnType<typeof harness>) => JSON.parse(h.sent[0]!.body!.toString()) as Record<string, unknown>;

describe('destinations add --batch-*: what is sent', () => {
  test('max events and max wait become the spec\'s batch; max bytes only when given', async () => {
    const h = echo();
    expect(await h.run([...ADD, '--batch-max-events', '100', '--batch-max-wait-ms', '2000'])).toBe(0);
    expect(sentSpec(h)).toEqual({ url: 'https://b.example/hook', batch: { maxEvents: 100, maxWaitMs: 2000 } });
    expect(JSON.parse(h.stdout()).batch).toEqual({ maxEvents: 100, maxWaitMs: 2000 });

    const h2 = echo();
    expect(await h2.run([...ADD, '--batch-max-events', '2', '--batch-max-wait-ms', '60000', '--batch-max-bytes', '65536'])).toBe(0);
    expect(sentSpec(h2).batch).toEqual({ maxEvents: 2, maxWaitMs: 60000, maxBytes: 65536 });
  });

  test('the bounds themselves are accepted', async () => {
    for (const [events, wait, bytes] of [
      ['2', '100', '1024'],
      ['1000', '60000', '1048576'],
    ]) {
      const h = echo();
      expect(await h.run([...ADD, '--batch-max-events', events!, '--batch-max-wait-ms', wait!, '--batch-max-bytes', bytes!])).toBe(0);
      expect(sentSpec(h).batch).toEqual({ maxEvents: Number(events), maxWaitMs: Number(wait), maxBytes: Number(bytes) });
    }
  });

  test('without the flags the spec has no batch: adding the id again turns batching off (the PUT replaces the whole spec)', async () => {
    const h = echo();
    expect(await h.run(ADD)).toBe(0);
    expect(sentSpec(h)).not.toHaveProperty('batch');
  });

  test('--help names the flags and how to turn batching off', async () => {
    const h = harness();
    expect(await h.run(['destinations', 'add', '--help'])).toBe(0);
    const help = h.stdout();
    expect(help).toContain('--batch-max-events <n>');
    expect(help).toContain('--batch-max-wait-ms <ms>');
    expect(help).toContain('--batch-max-bytes <bytes>');
    expect(help).toContain('adding an existing id again without a flag it was given before');
    expect(help).toContain('(--batch-*, --ordering, --rate-*, --lane, --policy, --filter …) sets that one back to its default');
  });
});

describe('destinations add --batch-*: refused before sending (exit 2), by flag', () => {
  async function refused(args: string[]): Promise<string> {
    const h = harness();
    expect(await h.run([...ADD, ...args])).toBe(2);
    expect(h.sent).toHaveLength(0);
    return h.stderr();
  }

  test('max events without max wait, and the other way round', async () => {
    expect(await refused(['--batch-max-events', '10'])).toContain(
      '  - --batch-max-wait-ms: is needed with --batch-max-events: a batch needs --batch-max-events and --batch-max-wait-ms both (leave every --batch-* flag out to send one event per request)',
    );
    const err = await refused(['--batch-max-wait-ms', '500']);
    expect(err).toContain('  - --batch-max-events: is needed with --batch-max-wait-ms');
    expect(err).not.toContain('  - --batch-max-wait-ms:');
  });

  test('max bytes alone names both missing flags', async () => {
    const err = await refused(['--batch-max-bytes', '4096']);
    expect(err).toContain('  - --batch-max-events: is needed with --batch-max-bytes');
    expect(err).toContain('  - --batch-max-wait-ms: is needed with --batch-max-bytes');
  });

  test.each([
    ['--batch-max-events', '1', 'must be 2–1000'],
    ['--batch-max-events', '1001', 'must be 2–1000'],
    ['--batch-max-events', '-5', 'must be 2–1000'],
    ['--batch-max-events', '2.5', 'must be a whole number'],
    ['--batch-max-events', 'ten', 'must be a number'],
    ['--batch-max-events', '1e2', 'must be a number'],
    ['--batch-max-events', '0x10', 'must be a number'],
    ['--batch-max-events', '', 'must be a number'],
    ['--batch-max-events', ' 10', 'must be a number'],
    ['--batch-max-wait-ms', '99', 'must be 100–60000'],
    ['--batch-max-wait-ms', '60001', 'must be 100–60000'],
    ['--batch-max-wait-ms', '1000ms', 'must be a number'],
    ['--batch-max-bytes', '1023', 'must be 1024–1048576'],
    ['--batch-max-bytes', '1048577', 'must be 1024–1048576'],
    ['--batch-max-bytes', '1KB', 'must be a number'],
  ])('%s %j: %s', async (flag, value, message) => {
    const others = { '--batch-max-events': '10', '--batch-max-wait-ms': '500' } as Record<string, string>;
    const args = Object.entries({ ...others, [flag]: value }).flat();
    const err = await refused(args);
    expect(err).toContain(`  - ${flag}: ${message}\n`);
    expect(err.match(/^ {2}- /gm)).toHaveLength(1);
  });

  test('every problem at once: the spec\'s and each batch flag\'s', async () => {
    const err = await refused(['--url', 'not a url', '--batch-max-events', '1', '--batch-max-wait-ms', '10', '--batch-max-bytes', 'big']);
    expect(err).toMatch(/^herald: invalid arguments for herald destinations add\n/);
    expect(err).toContain('  - --url: must be an absolute URL');
    expect(err).toContain('  - --batch-max-events: must be 2–1000');
    expect(err).toContain('  - --batch-max-wait-ms: must be 100–60000');
    expect(err).toContain('  - --batch-max-bytes: must be a number');
  });

  test('batchFromFlags: nothing given is no batch, not a problem', () => {
    expect(batchFromFlags({})).toEqual({ ok: true });
    expect(batchFromFlags({ batchMaxEvents: '+3', batchMaxWaitMs: '100' })).toEqual({ ok: true, batch: { maxEvents: 3, maxWaitMs: 100 } });
  });
});

describe('where the CLI shows the setting', () => {
  const base = { eventTypes: [] as string[], policy: 'event-platform' as const, status: 'active' as const, createdAt: 't', updatedAt: 't' };

  test('destinations list: a BATCH column once one destination is batched', async () => {
    const destinations = [
      { ...base, id: 'bulk', url: 'https://b.example/hook', failureMode: 'retry', batch: { maxEvents: 100, maxWaitMs: 2000 } },
      { ...base, id: 'huge', url: 'https://h.example/hook', failureMode: 'retry', batch: { maxEvents: 1000, maxWaitMs: 60000, maxBytes: 65536 } },
      { ...base, id: 'one', url: 'https://o.example/hook', failureMode: 'retry' },
    ];
    const h = harness(() => Response.json({ destinations }));
    expect(await h.run(['destinations', 'list'])).toBe(0);
    expect(h.stdout()).toBe(
      [
        'ID    STATUS  POLICY          ON FAILURE  EVENT TYPES  BATCH                             TARGET',
        'bulk  active  event-platform  retry       (all)        100 events / 2000 ms              https://b.example/hook',
        'huge  active  event-platform  retry       (all)        1000 events / 60000 ms / 65536 B  https://h.example/hook',
        'one   active  event-platform  retry       (all)        -                                 https://o.example/hook',
        '',
      ].join('\n'),
    );
  });

  test('destinations show: a summary line on stderr when batched, none otherwise', async () => {
    const d: DestinationInfo = { ...base, id: 'bulk', account: 'default', url: 'https://b.example/hook', batch: { maxEvents: 100, maxWaitMs: 2000 } };
    const h = harness(() => Response.json(d));
    expect(await h.run(['destinations', 'show', 'bulk'])).toBe(0);
    expect(JSON.parse(h.stdout()).batch).toEqual({ maxEvents: 100, maxWaitMs: 2000 });
    expect(h.stderr()).toContain('  sends batches of up to 100 events and 1048576 bytes (the default), each sent at the latest 2000 ms after its oldest event was accepted\n');
    const { batch: _batch, ...single } = d;
    expect(destinationSummary(single).join('\n')).not.toContain('batch');
    expect(batchSentence({ maxEvents: 5, maxWaitMs: 100, maxBytes: 2048 })).toBe('batches of up to 5 events and 2048 bytes, each sent at the latest 100 ms after its oldest event was accepted');
  });

  test('deliveries list: a BATCH column (the batch, and the place in it counted from 1) once one delivery was batched', () => {
    const view = (n: number, batch?: DeliveryView['batch']): DeliveryView =>
      ({ id: `bulk.key${n}`, destinationId: 'bulk', account: 'default', eventId: `e${n}`, eventSource: '/s', eventType: 't', status: 'DELIVERED', attempts: 1, availableAt: 'at', ...(batch ? { batch } : {}) }) as DeliveryView;
    expect(deliveriesTable([view(1), view(2)]).split('\n')[0]).not.toContain('BATCH');
    expect(deliveriesTable([view(1, { id: 'b_abc', position: 0, size: 2 }), view(2, { id: 'b_abc', position: 1, size: 2 }), view(3)])).toBe(
      [
        'DELIVERY ID  EVENT ID  TYPE  STATUS     ATTEMPTS  LAST ERROR  BATCH         AVAILABLE AT',
        'bulk.key1    e1        t     DELIVERED  1         -           b_abc 1 of 2  at',
        'bulk.key2    e2        t     DELIVERED  1         -           b_abc 2 of 2  at',
        'bulk.key3    e3        t     DELIVERED  1         -           -             at',
      ].join('\n'),
    );
  });
});

import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { putDestination } from '../../shared/app/admin/destinations-admin';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { applySpec, destinationSpecSchema, resetSettings } from '../../shared/domain/destinations/destination';
import { createLogger } from '../../shared/log';

/** PUT /admin/destinations/{id} replaces the whole spec: its answer names what the old spec had that the new one left out. */

const NOW = new Date('2026-11-27T10:00:00.000Z');
const spec = (s: Record<string, unknown>) => destinationSpecSchema.parse({ url: 'https://hooks.example.com/p', ...s });

test('resetSettings: each setting the old spec had, the new one does not give, and that changed; nothing on a create', () => {
  const before = applySpec('p', spec({ rate: { max: 20 }, lane: 'dedicated', batch: { maxEvents: 100, maxWaitMs: 1000 }, eventTypes: ['a.*'], technicalEmail: 'ops@example.com' }), undefined, NOW);
  const next = spec({ eventTypes: ['a.*'], technicalEmail: 'oncall@example.com' });
  const after = applySpec('p', next, before, NOW);
  expect(resetSettings(before, after, next)).toEqual([
    { setting: 'rate', was: { max: 20 } },
    { setting: 'lane', was: 'dedicated' },
    { setting: 'batch', was: { maxEvents: 100, maxWaitMs: 1000 } },
  ]);
  expect(resetSettings(undefined, after, next)).toEqual([]);
  // Given again, or given anew: nothing to say.
  const same = spec({ rate: { max: 20 }, lane: 'dedicated', batch: { maxEvents: 100, maxWaitMs: 1000 }, eventTypes: ['a.*'], technicalEmail: 'ops@example.com' });
  expect(resetSettings(before, applySpec('p', same, before, NOW), same)).toEqual([]);
});

test('the PUT answers `reset` only when a replace left settings out', async () => {
  const destinations = new MemoryDestinationStore();
  const log = createLogger({ write: () => undefined });
  const deps = {
    destinations,
    directory: new DestinationDirectory(destinations, { now: () => NOW }, 0),
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    clock: { now: () => NOW },
    log,
    addressRules: { allowLoopback: false },
    resolver: { lookup: async () => [{ address: '93.184.215.14', family: 4 as const }] },
  } as unknown as Parameters<typeof putDestination>[0];
  const put = async (s: Record<string, unknown>) => (await putDestination(deps, 'partner', { url: 'https://hooks.example.com/p', ...s })) as { body?: unknown };
  expect((await put({ rate: { max: 20 } })).body).not.toHaveProperty('reset');
  expect((await put({ rate: { max: 20 }, eventTypes: ['a'] })).body).not.toHaveProperty('reset');
  expect((await put({})).body).toMatchObject({ reset: [{ setting: 'eventTypes', was: ['a'] }, { setting: 'rate', was: { max: 20 } }] });
});

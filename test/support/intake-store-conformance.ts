import { IntakeBatch } from '../../shared/domain/intake/intake';
import { IntakeStore } from '../../shared/ports/intake';
import { contractSuite } from './contract-suite';

const batch = (id: string, acceptedAt: string, data = Buffer.from([0, 255, 10])): IntakeBatch => ({
  id,
  acceptedAt,
  events: [{ attributes: { specversion: '1.0', id: `e-${id}`, source: '/s', type: 't' }, data }],
});

/** IntakeStore's contract (shared/ports/intake.ts), every implementation: Firestore's on the emulator, memory's in unit tests. */
export function intakeStoreConformance(name: string, make: () => Promise<IntakeStore> | IntakeStore): void {
  contractSuite(`${name} intake store`, make, (store) => {
    test('due: batches accepted at or before a time (and after another, when given), oldest first, at most `limit`, events whole', async () => {
      await store.add(batch('i-3', '2026-11-25T10:00:03.000Z'));
      await store.add(batch('i-1', '2026-11-25T10:00:01.000Z', Buffer.from('{"a":1}')));
      await store.add(batch('i-2', '2026-11-25T10:00:02.000Z'));
      const due = await store.due(new Date('2026-11-25T10:00:02.000Z'), 10);
      expect(due.map((b) => b.id)).toEqual(['i-1', 'i-2']);
      expect(due[0]).toEqual({ ...batch('i-1', '2026-11-25T10:00:01.000Z'), events: [{ attributes: batch('i-1', '').events[0]!.attributes, data: Buffer.from('{"a":1}') }] });
      expect(Buffer.isBuffer(due[1]!.events[0]!.data) && due[1]!.events[0]!.data.equals(Buffer.from([0, 255, 10]))).toBe(true);
      expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 2)).map((b) => b.id)).toEqual(['i-1', 'i-2']);
      expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10, '2026-11-25T10:00:01.000Z')).map((b) => b.id)).toEqual(['i-2', 'i-3']);
      expect(await store.due(new Date('2026-11-25T10:00:00.000Z'), 10)).toEqual([]);
    });

    test('remove deletes the batches named, and ignores ids it does not hold', async () => {
      for (const [id, at] of [
        ['i-1', '2026-11-25T10:00:01.000Z'],
        ['i-2', '2026-11-25T10:00:02.000Z'],
        ['i-3', '2026-11-25T10:00:03.000Z'],
      ] as const)
        await store.add(batch(id, at));
      await store.remove([batch('i-1', '2026-11-25T10:00:01.000Z'), batch('i-3', '2026-11-25T10:00:03.000Z'), batch('i-unknown', '2026-11-25T10:00:04.000Z')]);
      expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10)).map((b) => b.id)).toEqual(['i-2']);
      await store.remove([]);
      await store.remove([batch('i-2', '2026-11-25T10:00:02.000Z')]);
      expect(await store.due(new Date('2026-11-25T10:00:05.000Z'), 10)).toEqual([]);
    });

    test('progress is kept on the batch and comes back with it; on a batch removed meanwhile it writes nothing', async () => {
      await store.add(batch('i-1', '2026-11-25T10:00:01.000Z'));
      expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10))[0]!.progress).toBeUndefined();
      await store.progress('i-1', 84);
      await store.progress('i-1', 168);
      const [kept] = await store.due(new Date('2026-11-25T10:00:05.000Z'), 10);
      expect(kept).toEqual({ ...batch('i-1', '2026-11-25T10:00:01.000Z'), progress: 168 });
      await store.remove([batch('i-1', '2026-11-25T10:00:01.000Z')]);
      await store.progress('i-1', 252);
      expect(await store.due(new Date('2026-11-25T10:00:05.000Z'), 10)).toEqual([]);
    });

    test("a batch is kept as it was added: events the caller adds to its list afterwards are not in it", async () => {
      const b = batch('i-1', '2026-11-25T10:00:01.000Z');
      await store.add(b);
      b.events.push(batch('i-x', '').events[0]!);
      const [stored] = await store.due(new Date('2026-11-25T10:00:05.000Z'), 10);
      expect(stored!.events.map((e) => e.attributes.id)).toEqual(['e-i-1']);
    });
  });
}

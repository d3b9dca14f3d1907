import { DestinationDirectory } from '../../shared/app/destination-directory';
import { applySpec, Destination } from '../../shared/domain/destination';
import { DestinationChanges } from '../../shared/ports';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';

const at = new Date('2026-11-25T10:00:00Z');
const dest = (id: string, types: string[]) => applySpec(id, { url: `https://example.com/${id}`, eventTypes: types }, undefined, at);

/** A store with a change log: what changed since a read time, as Firestore's adapter answers. */
class LoggedStore extends MemoryDestinationStore {
  readonly looks: (Date | undefined)[] = [];
  private log: { at: number; id: string }[] = [];
  private time = 1;
  fail = false;

  async write(d: Destination): Promise<void> {
    await this.put(d);
    this.log.push({ at: this.time++, id: d.id });
  }

  async remove(id: string): Promise<void> {
    await this.delete(id);
    this.log.push({ at: this.time++, id });
  }

  async changesSince(since: Date | undefined): Promise<DestinationChanges> {
    this.looks.push(since);
    if (this.fail) throw new Error('unavailable');
    const readTime = new Date(this.time++);
    if (since === undefined) return { initial: true, upserted: await this.list(), removed: [], readTime };
    const changed = [...new Set(this.log.filter((e) => e.at > since.getTime()).map((e) => e.id))];
    const found = await Promise.all(changed.map(async (id) => [id, await super.get(id)] as const));
    return { initial: false, upserted: found.flatMap(([, d]) => (d ? [d] : [])), removed: found.flatMap(([id, d]) => (d ? [] : [id])), readTime };
  }
}

function setup() {
  let now = 0;
  const store = new LoggedStore();
  const clock = { now: () => new Date(now), advance: (ms: number) => void (now += ms) };
  return { store, clock, directory: new DestinationDirectory(store, clock, 10_000) };
}

test('reads the registry whole once, then only what changed, at most once per ttl', async () => {
  const { store, clock, directory } = setup();
  await store.write(dest('orders', ['com.example.order.*']));
  await store.write(dest('billing', ['com.example.invoice']));
  expect((await directory.matching('com.example.order.paid')).map((d) => d.id)).toEqual(['orders']);
  expect(store.looks).toEqual([undefined]);

  await store.write(dest('orders', ['com.example.other']));
  await store.remove('billing');
  clock.advance(9_999);
  expect((await directory.matching('com.example.order.paid')).map((d) => d.id)).toEqual(['orders']);
  expect(store.looks).toHaveLength(1);

  clock.advance(1);
  expect(await directory.matching('com.example.order.paid')).toEqual([]);
  expect(await directory.matching('com.example.invoice')).toEqual([]);
  expect(store.looks).toHaveLength(2);
  expect(store.looks[1]).toBeInstanceOf(Date);
});

test("this process's own writes are seen at once; a failed look is not kept", async () => {
  const { store, clock, directory } = setup();
  await directory.matching('x');
  directory.changed('new', dest('new', ['com.example.x']));
  expect((await directory.matching('com.example.x')).map((d) => d.id)).toEqual(['new']);
  directory.changed('new');
  expect(await directory.matching('com.example.x')).toEqual([]);

  store.fail = true;
  clock.advance(10_000);
  await expect(directory.matching('x')).rejects.toThrow('unavailable');
  store.fail = false;
  await store.write(dest('late', ['com.example.x']));
  expect((await directory.matching('com.example.x')).map((d) => d.id)).toEqual(['late']);
});

test('after half a day without a look it reads the registry whole again', async () => {
  const { store, clock, directory } = setup();
  await directory.matching('x');
  clock.advance(12 * 3600_000);
  await directory.matching('x');
  expect(store.looks).toEqual([undefined, undefined]);
});

test('a destination created elsewhere is found by one look at the change log, which brings the others created with it', async () => {
  const { store, clock, directory } = setup();
  await directory.matching('x');
  const gets = jest.spyOn(store, 'get');
  for (let i = 0; i < 5; i++) await store.write(dest(`new-${i}`, ['com.example.x']));
  clock.advance(1);
  expect((await directory.get('new-0'))?.id).toBe('new-0');
  for (let i = 1; i < 5; i++) expect((await directory.get(`new-${i}`))?.id).toBe(`new-${i}`);
  // One look for the five, no read of a destination by id.
  expect(store.looks).toHaveLength(2);
  expect(gets).not.toHaveBeenCalled();

  // Not in the change log either: the store is asked, and has the last word.
  clock.advance(1);
  expect(await directory.get('never')).toBeUndefined();
  expect(gets).toHaveBeenCalledWith('never');
  expect(store.looks).toHaveLength(3);
});

test('fresh: the store\'s copy now, within the ttl, and the index takes it (a change made on another instance, or a delete)', async () => {
  const { store, directory } = setup();
  await store.write(dest('orders', ['com.example.a']));
  expect((await directory.get('orders'))?.eventTypes).toEqual(['com.example.a']);
  await store.write(dest('orders', ['com.example.a', 'com.example.b']));
  expect((await directory.get('orders'))?.eventTypes).toEqual(['com.example.a']);
  expect((await directory.fresh('orders'))?.eventTypes).toEqual(['com.example.a', 'com.example.b']);
  expect((await directory.matching('com.example.b')).map((d) => d.id)).toEqual(['orders']);
  await store.remove('orders');
  expect(await directory.fresh('orders')).toBeUndefined();
  expect(await directory.matching('com.example.a')).toEqual([]);
  expect(store.looks).toHaveLength(1);
});

import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { applySpec, Destination } from '../../shared/domain/destinations/destination';
import { DestinationChanges } from '../../shared/ports/destinations';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { DestinationIndex } from '../../shared/domain/destinations/destination-index';
import { splitDestinationId } from '../../shared/domain/ids';

const at = new Date('2026-11-25T10:00:00Z');
const dest = (id: string, types: string[]) => applySpec(id, { url: `https://example.com/${id}`, eventTypes: types }, undefined, at);

/** A store with a change log: what changed since a read time, as Firestore's adapter answers. */
class LoggedStore extends MemoryDestinationStore {
  readonly looks: (Date | undefined)[] = [];
  /** Documents read, as Firestore bills them (a query at least one). */
  reads = 0;
  readonly listed: string[] = [];

  override async list(): Promise<Destination[]> {
    const all = await super.list();
    this.reads += Math.max(1, all.length);
    return all;
  }

  override async listAccount(account: string): Promise<Destination[]> {
    this.listed.push(account);
    const all = (await super.list()).filter((d) => splitDestinationId(d.id).account === account);
    this.reads += Math.max(1, all.length);
    return all;
  }

  override async get(id: string): Promise<Destination | undefined> {
    this.reads++;
    return super.get(id);
  }

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
    this.reads++;
    if (since === undefined) return { upserted: [], removed: [], readTime };
    const changed = [...new Set(this.log.filter((e) => e.at > since.getTime()).map((e) => e.id))];
    this.reads += changed.length;
    const found = await Promise.all(changed.map(async (id) => [id, await super.get(id)] as const));
    return { upserted: found.flatMap(([, d]) => (d ? [d] : [])), removed: found.flatMap(([id, d]) => (d ? [] : [id])), readTime };
  }
}

function setup(maxDestinations?: number) {
  let now = 0;
  const store = new LoggedStore();
  const clock = { now: () => new Date(now), advance: (ms: number) => void (now += ms) };
  return { store, clock, directory: new DestinationDirectory(store, clock, 10_000, maxDestinations) };
}

test('reads an account when first used, then only what changed, at most once per ttl', async () => {
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

test('after half a day without a look it drops what it holds and starts again from where the log stands: the account is read again, never the registry', async () => {
  const { store, clock, directory } = setup();
  await store.write(dest('orders', ['x']));
  await directory.matching('x');
  clock.advance(12 * 3600_000);
  expect((await directory.matching('x')).map((d) => d.id)).toEqual(['orders']);
  expect(store.looks).toEqual([undefined, undefined]);
  expect(store.listed).toEqual(['default', 'default']);
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

/** 1,000 destinations in 100 accounts, 10 each (`acct-N_dest-M`), every one taking `com.example.x`. */
async function registry(store: LoggedStore): Promise<void> {
  for (let a = 0; a < 100; a++) for (let d = 0; d < 10; d++) await store.write(dest(`acct-${a}_dest-${d}`, ['com.example.x']));
  store.reads = 0;
}

test("routing an account's first event reads that account only (one query), and nothing more until the ttl; a fresh instance's start reads no destination", async () => {
  const { store, clock, directory } = setup();
  await registry(store);
  expect((await directory.matching('com.example.x', 'acct-7')).map((d) => d.id)).toHaveLength(10);
  // Where the change log stands (one read), then acct-7's ten: not the 1,000.
  expect(store.reads).toBe(11);
  expect(store.listed).toEqual(['acct-7']);
  expect(directory.size).toBe(10);
  await directory.matching('com.example.x', 'acct-7');
  expect((await directory.get('acct-7_dest-3'))?.id).toBe('acct-7_dest-3');
  expect(store.reads).toBe(11);
  // A delivery to a destination of an account not held reads that destination alone, once.
  expect((await directory.get('acct-8_dest-0'))?.id).toBe('acct-8_dest-0');
  expect((await directory.get('acct-8_dest-0'))?.id).toBe('acct-8_dest-0');
  expect((await directory.get('acct-8_dest-9'))?.id).toBe('acct-8_dest-9');
  expect(store.listed).toEqual(['acct-7']);
  expect(store.reads).toBe(13);

  // Catching up costs what changed: three changes among 1,000 destinations, three reads and the look's own.
  await store.write(dest('acct-7_dest-0', ['com.example.y']));
  await store.write(dest('acct-8_dest-9', ['com.example.y']));
  await store.write(dest('acct-50_dest-0', ['com.example.y']));
  clock.advance(10_000);
  store.reads = 0;
  expect((await directory.matching('com.example.x', 'acct-7')).map((d) => d.id)).not.toContain('acct-7_dest-0');
  expect(store.reads).toBe(4);
  expect((await directory.get('acct-8_dest-9'))?.eventTypes).toEqual(['com.example.y']);
  expect(store.reads).toBe(4);
  // A change to what is not held is not taken in: it is read when used.
  expect(directory.size).toBe(12);
});

test('past maxDestinations the least recently used go first, accounts and destinations held alone alike', async () => {
  const { store, directory } = setup(21);
  await registry(store);
  await directory.get('acct-9_dest-0');
  await directory.matching('com.example.x', 'acct-1');
  await directory.get('acct-9_dest-1');
  await directory.matching('com.example.x', 'acct-2');
  // 22 held: acct-9_dest-0, used first, goes; acct-9_dest-1 stays.
  expect(directory.size).toBe(21);
  store.reads = 0;
  await directory.get('acct-9_dest-1');
  expect(store.reads).toBe(0);
  await directory.get('acct-9_dest-0');
  expect(store.reads).toBe(1);
});

test('holds at most maxDestinations, whole accounts, dropping the least recently used first; one dropped is read again when used', async () => {
  const { store, directory } = setup(25);
  await registry(store);
  await directory.matching('com.example.x', 'acct-1');
  await directory.matching('com.example.x', 'acct-2');
  await directory.matching('com.example.x', 'acct-1');
  await directory.matching('com.example.x', 'acct-3');
  // acct-2 was used least recently: dropped, so 20 are held.
  expect(directory.size).toBe(20);
  expect(store.listed).toEqual(['acct-1', 'acct-2', 'acct-3']);
  expect(await directory.matching('com.example.x', 'acct-1')).toHaveLength(10);
  expect(store.listed).toEqual(['acct-1', 'acct-2', 'acct-3']);
  expect(await directory.matching('com.example.x', 'acct-2')).toHaveLength(10);
  expect(store.listed).toEqual(['acct-1', 'acct-2', 'acct-3', 'acct-2']);
  expect(directory.size).toBeLessThanOrEqual(25);
});

test('the accounts one caller needs are all held while it matches, even past maxDestinations (an accepted event is matched against every destination of its account)', async () => {
  const { store, directory } = setup(15);
  await registry(store);
  const accounts = ['acct-1', 'acct-2', 'acct-3', 'acct-4'];
  const counts = await directory.withAccounts(accounts, (matching) => accounts.map((a) => matching('com.example.x', a).length));
  expect(counts).toEqual([10, 10, 10, 10]);
  // Once that caller is done, the room is made again.
  expect(directory.size).toBeLessThanOrEqual(15);
});

test('secrets are held sealed and opened when a destination is handed out', async () => {
  const { store, directory } = setup();
  const orders = dest('acme_orders', ['com.example.x']);
  orders.previousSecrets = [{ secret: 'whsec_old', expiresAt: '2026-11-26T10:00:00Z' }];
  await store.write(orders);
  expect((await directory.get('acme_orders'))?.secret).toBe(orders.secret);
  const alone = (directory as unknown as { singles: Map<string, { destination: Destination }> }).singles.get('acme_orders')!.destination;
  expect(alone.secret).toMatch(/^enc:/);
  expect(JSON.stringify(alone)).not.toContain(orders.secret);
  const [routed] = await directory.matching('com.example.x', 'acme');
  expect(routed?.secret).toBe(orders.secret);
  expect(routed?.previousSecrets?.[0]?.secret).toBe('whsec_old');
  // What is held: sealed, no plaintext anywhere in it.
  const held = (directory as unknown as { index: DestinationIndex }).index.get('acme_orders')!;
  expect(held.secret).toMatch(/^enc:/);
  expect(JSON.stringify(held)).not.toContain(orders.secret);
  expect(JSON.stringify(held)).not.toContain('whsec_old');
});

/** The store's next account read takes its snapshot, then waits for the call of what this returns. */
function holdNextRead(store: LoggedStore): () => void {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const read = store.listAccount.bind(store);
  jest.spyOn(store, 'listAccount').mockImplementationOnce(async (account) => {
    const snapshot = await read(account);
    await held;
    return snapshot;
  });
  return release;
}

test("a look that ends while an account is being read does not lose that account's changes: the next look reads again from where the read began", async () => {
  const { store, clock, directory } = setup();
  await store.write(dest('acct-1_a', ['com.example.x']));
  await store.write(dest('acct-2_a', ['com.example.x']));
  await directory.matching('com.example.x', 'acct-1');
  // acct-2's read takes its snapshot, then waits; meanwhile acct-2_a changes and a look runs.
  const release = holdNextRead(store);
  const reading = directory.matching('com.example.x', 'acct-2');
  await new Promise((r) => setImmediate(r));
  await store.write(dest('acct-2_a', ['com.example.y']));
  clock.advance(10_000);
  await directory.matching('com.example.x', 'acct-1');
  release();
  // The read answers its (older) snapshot...
  expect((await reading).map((d) => d.id)).toEqual(['acct-2_a']);
  // ...and the next look brings the change the look in between could not apply.
  clock.advance(10_000);
  expect(await directory.matching('com.example.x', 'acct-2')).toEqual([]);
  expect((await directory.matching('com.example.y', 'acct-2')).map((d) => d.id)).toEqual(['acct-2_a']);
});

test("this process's write to an account being read is kept once the read ends", async () => {
  const { store, directory } = setup();
  await directory.matching('com.example.x', 'acct-1');
  const release = holdNextRead(store);
  const reading = directory.matching('com.example.x', 'acct-2');
  await new Promise((r) => setImmediate(r));
  const made = dest('acct-2_new', ['com.example.x']);
  await store.put(made);
  directory.changed(made.id, made);
  release();
  expect((await reading).map((d) => d.id)).toEqual(['acct-2_new']);
});

import { MemoryAccountStore } from '../../shared/adapters/memory/account-store';
import { createAccount, createKey, deleteAccount, AccountsAdminDeps, updateAccount } from '../../shared/app/admin/accounts-admin';
import { eraseAccountData, finishAccountPurges, PURGE_INLINE_MS } from '../../shared/app/access/account-purge';
import { KeyVerifier } from '../../shared/app/access/key-verifier';
import { OPERATOR } from '../../shared/domain/access/account';
import { AccountDataEraser } from '../../shared/ports/accounts';
import { Clock, Logger } from '../../shared/ports/clock';

/** A clock that moves only when told (each erase step below takes its time). */
class StepClock implements Clock {
  constructor(public ms: number) {}
  now(): Date {
    return new Date(this.ms);
  }
}

/** An account's documents in the stores: `counts[account]` left, erased `perStep` at a time, each step taking `stepMs` of the clock. */
class FakeEraser implements AccountDataEraser {
  readonly steps: string[] = [];
  failing = false;
  constructor(
    readonly counts: Record<string, number>,
    private readonly clock: StepClock,
    private readonly perStep = 500,
    private readonly stepMs = 100,
  ) {}

  async eraseSome(account: string, limit: number, cursor?: string): Promise<{ deleted: number; cursor?: string }> {
    if (this.failing) throw new Error('Firestore unavailable');
    this.steps.push(`${account}@${cursor ?? 'start'}`);
    this.clock.ms += this.stepMs;
    const deleted = Math.min(this.counts[account] ?? 0, this.perStep, limit);
    this.counts[account] = (this.counts[account] ?? 0) - deleted;
    // Like the store: go on while a step was full, else the pass is over.
    return { deleted, ...(deleted === Math.min(this.perStep, limit) ? { cursor: 'more' } : {}) };
  }
}

const T0 = Date.parse('2026-11-25T12:00:00.000Z');
const logs: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
const log: Logger = {
  debug: (message, fields) => logs.push({ level: 'debug', message, ...(fields ? { fields } : {}) }),
  info: (message, fields) => logs.push({ level: 'info', message, ...(fields ? { fields } : {}) }),
  warn: (message, fields) => logs.push({ level: 'warn', message, ...(fields ? { fields } : {}) }),
  error: (message, fields) => logs.push({ level: 'error', message, ...(fields ? { fields } : {}) }),
};

function setup(counts: Record<string, number> = {}) {
  const clock = new StepClock(T0);
  const accounts = new MemoryAccountStore();
  const accountData = new FakeEraser(counts, clock);
  const keys = new KeyVerifier(accounts, clock);
  const deps: AccountsAdminDeps = { accounts, destinations: { countAccount: async () => 0 }, keys, clock, log, accountData };
  return { clock, accounts, accountData, keys, deps };
}

describe('an account id is never reused', () => {
  test('re-creating a deleted id is 409, saying so; a name whose id was deleted gets another id', async () => {
    const { deps } = setup();
    expect(await createAccount(deps, OPERATOR, { id: 'acme', name: 'Acme' })).toMatchObject({ kind: 'created' });
    expect(await deleteAccount(deps, OPERATOR, 'acme')).toEqual({ kind: 'done' });
    expect(await createAccount(deps, OPERATOR, { id: 'acme', name: 'Acme again' })).toEqual({
      kind: 'conflict',
      body: { error: 'the account id "acme" belonged to an account that was deleted, and ids of deleted accounts are never reused; give another "id"' },
    });
    const fromName = await createAccount(deps, OPERATOR, { name: 'Acme' });
    expect(fromName).toMatchObject({ kind: 'created', body: { id: expect.stringMatching(/^acme-[a-z0-9]+$/) as unknown } });
  });

  test('a change racing the deletion does not bring the account back', async () => {
    const { deps, accounts } = setup();
    await createAccount(deps, OPERATOR, { id: 'acme', name: 'Acme' });
    const stale = await accounts.get('acme');
    await deleteAccount(deps, OPERATOR, 'acme');
    // The change found the account just before the deletion, and writes just after it.
    let looked = false;
    const findsStale = async (id: string) => (looked ? accounts.get(id) : ((looked = true), stale));
    const racing: AccountsAdminDeps = { ...deps, accounts: Object.assign(Object.create(accounts) as MemoryAccountStore, { get: findsStale }) };
    expect(await updateAccount(racing, OPERATOR, 'acme', { name: 'Back again' })).toMatchObject({ kind: 'not-found' });
    expect(await accounts.get('acme')).toBeUndefined();
  });

  test("the deleted account's keys are refused at once on this instance", async () => {
    const { deps, keys } = setup();
    await createAccount(deps, OPERATOR, { id: 'acme', name: 'Acme' });
    const made = await createKey(deps, OPERATOR, 'acme', { name: 'k' });
    const key = (made as { body: { key: string } }).body.key;
    expect(await keys.verify(key)).toMatchObject({ ok: true });
    await deleteAccount(deps, OPERATOR, 'acme');
    expect(await keys.verify(key)).toEqual({ ok: false, reason: 'unknown' });
  });
});

describe('deleting an account deletes its data', () => {
  test('a small account: all of it before the answer, the tombstone pending until the scheduled purge finds nothing late', async () => {
    const { deps, accounts, accountData, clock } = setup({ acme: 1200 });
    await createAccount(deps, OPERATOR, { id: 'acme', name: 'Acme' });
    expect(await deleteAccount(deps, OPERATOR, 'acme')).toEqual({ kind: 'done' });
    expect(accountData.counts.acme).toBe(0);
    expect((await accounts.pendingPurges(10)).map((t) => t.id)).toEqual(['acme']);
    // A counter flushed late, within the settle time: deleted, still pending.
    accountData.counts.acme = 3;
    expect(await finishAccountPurges({ ...deps, settleMs: 60_000 }, clock.ms + 5_000)).toEqual({ purged: [], pending: ['acme'], deleted: 3 });
    clock.ms = T0 + 60_000;
    expect(await finishAccountPurges({ ...deps, settleMs: 60_000 }, clock.ms + 5_000)).toEqual({ purged: ['acme'], pending: [], deleted: 0 });
    expect(await accounts.pendingPurges(10)).toEqual([]);
  });

  test('a large account: the answer comes within its few seconds, and the scheduled purge goes on from there over as many runs as it takes', async () => {
    const { deps, accounts, accountData, clock } = setup({ big: 1_000_000 });
    await createAccount(deps, OPERATOR, { id: 'big', name: 'Big' });
    expect(await deleteAccount(deps, OPERATOR, 'big')).toEqual({ kind: 'done' });
    expect(clock.ms - T0).toBeLessThanOrEqual(PURGE_INLINE_MS + 100);
    expect(accountData.counts.big).toBeGreaterThan(0);
    expect(logs.find((l) => l.message === 'account deleted' && l.fields?.account === 'big')?.fields).toMatchObject({ account: 'big', data: 'partly deleted; the scheduled purge goes on' });
    let runs = 0;
    while ((await accounts.pendingPurges(10)).length > 0 && runs < 100) {
      clock.ms += 60_000;
      await finishAccountPurges({ ...deps, settleMs: 0 }, clock.ms + 10_000);
      runs++;
    }
    expect(accountData.counts.big).toBe(0);
    expect(runs).toBeGreaterThan(1);
  });

  test('one that fails part-way still answers 204 (the account is gone) and is left pending; a run that fails is tried again', async () => {
    const { deps, accounts, accountData, clock } = setup({ acme: 10 });
    await createAccount(deps, OPERATOR, { id: 'acme', name: 'Acme' });
    accountData.failing = true;
    expect(await deleteAccount(deps, OPERATOR, 'acme')).toEqual({ kind: 'done' });
    expect(await finishAccountPurges({ ...deps, settleMs: 0 }, clock.ms + 5_000)).toEqual({ purged: [], pending: ['acme'], deleted: 0 });
    accountData.failing = false;
    expect(await finishAccountPurges({ ...deps, settleMs: 0 }, clock.ms + 5_000)).toEqual({ purged: ['acme'], pending: [], deleted: 10 });
    expect(await accounts.pendingPurges(10)).toEqual([]);
  });

  test('a pass counts as clean only when it ran from the start and found nothing', async () => {
    const clock = new StepClock(T0);
    const eraser = new FakeEraser({ acme: 500 }, clock);
    // Exactly one full step: the pass that deleted it, then a pass that finds nothing.
    expect(await eraseAccountData({ accountData: eraser, clock }, 'acme', T0 + 10_000)).toEqual({ clean: true, deleted: 500 });
    expect(eraser.steps).toEqual(['acme@start', 'acme@more', 'acme@start']);
  });
});

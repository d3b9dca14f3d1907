import {
  accountCreateSchema,
  accountIdFromName,
  accountPatchSchema,
  accountSettingsSchema,
  failurePolicyOf,
  hasScope,
  keyCreateSchema,
  keyGrant,
  keyIdOf,
  keyView,
  mintKey,
  newAccount,
  patchAccount,
  purgeSettled,
  reaches,
  scopeFor,
  verifyKey,
  withSettings,
} from '../../../shared/domain/access/account';
import { issuesFromZod } from '../../../shared/domain/events/event';
import { DESTINATION_ID, internalDestinationId, INTERNAL_DESTINATION_ID, isDeliveryId, splitDestinationId } from '../../../shared/domain/ids';

const NOW = new Date('2026-11-25T12:00:00Z');

describe('destination ids inside Herald', () => {
  it('keep the default account plain and prefix any other, both ways', () => {
    expect(internalDestinationId('default', 'orders')).toBe('orders');
    expect(internalDestinationId('acme', 'orders')).toBe('acme_orders');
    expect(splitDestinationId('orders')).toEqual({ account: 'default', id: 'orders' });
    expect(splitDestinationId('acme_orders')).toEqual({ account: 'acme', id: 'orders' });
    expect(splitDestinationId('a-1_b-2')).toEqual({ account: 'a-1', id: 'b-2' });
  });

  it("never collide: `_` is in neither id's alphabet", () => {
    expect(DESTINATION_ID.test('acme_orders')).toBe(false);
    expect(INTERNAL_DESTINATION_ID.test('acme_orders')).toBe(true);
    expect(INTERNAL_DESTINATION_ID.test('orders')).toBe(true);
    for (const bad of ['_orders', 'acme_', 'a_b_c', 'Acme_orders', 'acme_-x', '']) expect(INTERNAL_DESTINATION_ID.test(bad)).toBe(false);
    expect(isDeliveryId('acme_orders.abc-123')).toBe(true);
    expect(isDeliveryId('acme_orders_x.abc')).toBe(false);
  });
});

describe('accounts', () => {
  it('validates a new account precisely', () => {
    expect(accountCreateSchema.safeParse({ name: 'Acme' }).success).toBe(true);
    const bad = accountCreateSchema.safeParse({ id: 'Acme!', name: '', extra: 1 });
    expect(bad.success).toBe(false);
    expect(issuesFromZod(bad.error!)).toEqual(
      expect.arrayContaining([
        { path: 'id', message: expect.stringMatching(/^an account id is 1-63/) },
        { path: 'name', message: 'name must not be empty' },
        { path: '', message: 'unknown field extra' },
      ]),
    );
  });

  it('derives an id from a name, never `default`, with a random tail when nothing usable is left', () => {
    expect(accountIdFromName('Acme Corp.')).toBe('acme-corp');
    expect(accountIdFromName('Ünïcode Ltd')).toBe('unicode-ltd');
    expect(accountIdFromName('default', () => 'abc123')).toBe('account-abc123');
    expect(accountIdFromName('!!!', () => 'abc123')).toBe('account-abc123');
    expect(accountIdFromName('x'.repeat(80)).length).toBe(50);
  });

  it('patches name and email (null removes the email) and refuses an empty change', () => {
    const a = newAccount('acme', { name: 'Acme', technicalEmail: 'ops@acme.example' }, NOW);
    const later = new Date(NOW.getTime() + 1000);
    expect(patchAccount(a, accountPatchSchema.parse({ technicalEmail: null }), later)).toEqual({ ...a, technicalEmail: undefined, updatedAt: later.toISOString() } as never);
    expect('technicalEmail' in patchAccount(a, { technicalEmail: null }, later)).toBe(false);
    expect(patchAccount(a, { name: 'Acme Inc' }, later).name).toBe('Acme Inc');
    expect(accountPatchSchema.safeParse({}).success).toBe(false);
  });

  it('seed 003: retry until set; POST replaces the settings, PATCH merges; only retry or queue', () => {
    const a = newAccount('acme', { name: 'Acme' }, NOW);
    expect(failurePolicyOf(a)).toBe('retry');
    expect(failurePolicyOf(undefined)).toBe('retry');
    const queued = withSettings(a, accountSettingsSchema.parse({ 'notification.webhook.failure.policy': 'queue' }), 'replace', NOW);
    expect(failurePolicyOf(queued)).toBe('queue');
    expect(failurePolicyOf(withSettings(queued, {}, 'merge', NOW))).toBe('queue');
    expect(failurePolicyOf(withSettings(queued, {}, 'replace', NOW))).toBe('retry');
    const bad = accountSettingsSchema.safeParse({ 'notification.webhook.failure.policy': 'drop' });
    expect(bad.error!.issues[0]!.message).toBe('notification.webhook.failure.policy must be "retry" or "queue"');
    expect(accountSettingsSchema.safeParse({ 'notification.webhook.failure.polcy': 'retry' }).success).toBe(false);
  });
});

describe('account keys', () => {
  const spec = keyCreateSchema(NOW).parse({ name: 'ci' });

  it('are minted with every scope by default, and only the hash is kept', () => {
    const { key, record } = mintKey('acme', spec, 'admin', NOW);
    expect(key).toMatch(/^hk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(record.scopes).toEqual(['read', 'write', 'publish']);
    expect(JSON.stringify(record)).not.toContain(key.slice(20));
    expect(keyIdOf(key)).toBe(record.id);
    expect(keyView(record)).not.toHaveProperty('hash');
  });

  it('verify only the exact key, and refuse a revoked or expired one', () => {
    const { key, record } = mintKey('acme', keyCreateSchema(NOW).parse({ name: 'ci', scopes: ['read'], expiresAt: '2026-11-26T00:00:00Z' }), 'admin', NOW);
    expect(verifyKey(key, record, NOW)).toEqual({ ok: true, key: record });
    const tampered = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
    expect(verifyKey(tampered, record, NOW)).toEqual({ ok: false, reason: 'unknown' });
    expect(verifyKey(key, undefined, NOW)).toEqual({ ok: false, reason: 'unknown' });
    expect(verifyKey(key, { ...record, revokedAt: NOW.toISOString() }, NOW)).toEqual({ ok: false, reason: 'revoked' });
    expect(verifyKey(key, record, new Date('2026-11-26T00:00:00Z'))).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuse a past expiry, an unknown scope and an empty scope list', () => {
    const schema = keyCreateSchema(NOW);
    expect(schema.safeParse({ name: 'x', expiresAt: '2026-11-24T00:00:00Z' }).error!.issues[0]!.message).toBe('expiresAt must be in the future');
    expect(schema.safeParse({ name: 'x', scopes: ['admin'] }).error!.issues[0]!.message).toBe('a scope is "read", "write" or "publish"');
    expect(schema.safeParse({ name: 'x', scopes: [] }).success).toBe(false);
    expect(keyIdOf('herald_admin_xyz')).toBeUndefined();
  });
});

describe('what a new key may be granted', () => {
  const spec = (fields: Record<string, unknown> = {}) => keyCreateSchema(NOW).parse({ name: 'k', ...fields });
  const key = (scopes: ('read' | 'write' | 'publish')[], expiresAt?: string) => ({ kind: 'key', account: 'acme', keyId: 'k1', scopes, ...(expiresAt ? { expiresAt } : {}) }) as const;

  it('the operator grants anything: all three scopes when none are named, any expiry', () => {
    expect(keyGrant({ kind: 'operator' }, spec())).toEqual({ ok: true, grant: { scopes: ['read', 'write', 'publish'] } });
    expect(keyGrant({ kind: 'operator' }, spec({ scopes: ['publish', 'read', 'publish'], expiresAt: '2030-01-01T00:00:00+01:00' }))).toEqual({ ok: true, grant: { scopes: ['read', 'publish'], expiresAt: '2029-12-31T23:00:00.000Z' } });
  });

  it('a key grants only scopes it holds: one it lacks is refused by name, with what to do', () => {
    const verdict = keyGrant(key(['read', 'write']), spec({ scopes: ['read', 'publish'] }));
    expect(verdict).toEqual({
      ok: false,
      error: 'this key cannot grant "publish": a key may grant only the scopes it holds (read, write); leave scopes out to grant those, or create the key with the admin token or a key that holds "publish"',
      issues: [{ path: 'scopes', message: '"publish" is not a scope of the key making it (it holds read, write)' }],
    });
    const two = keyGrant(key(['write']), spec({ scopes: ['publish', 'read'] }));
    expect(two.ok === false && two.issues[0]!.message).toBe('"read", "publish" are not scopes of the key making it (it holds write)');
    expect(keyGrant(key(['read', 'write']), spec({ scopes: ['write'] }))).toEqual({ ok: true, grant: { scopes: ['write'] } });
  });

  it("a key naming no scopes grants its own, never more", () => {
    expect(keyGrant(key(['write', 'read']), spec())).toEqual({ ok: true, grant: { scopes: ['read', 'write'] } });
    expect(keyGrant(key(['write']), spec())).toEqual({ ok: true, grant: { scopes: ['write'] } });
  });

  it('a key cannot mint a key that outlives it: no expiry given takes its own, a later one is refused', () => {
    const until = '2026-12-01T00:00:00.000Z';
    expect(keyGrant(key(['write'], until), spec())).toEqual({ ok: true, grant: { scopes: ['write'], expiresAt: until } });
    expect(keyGrant(key(['write'], until), spec({ expiresAt: '2026-11-30T00:00:00Z' }))).toEqual({ ok: true, grant: { scopes: ['write'], expiresAt: '2026-11-30T00:00:00.000Z' } });
    expect(keyGrant(key(['write'], until), spec({ expiresAt: until }))).toMatchObject({ ok: true });
    expect(keyGrant(key(['write'], until), spec({ expiresAt: '2026-12-01T00:00:01Z' }))).toEqual({
      ok: false,
      error: `this key expires at ${until}: a key cannot make a key that outlives it; give an expiresAt at or before ${until}, leave it out to take that one, or create the key with the admin token`,
      issues: [{ path: 'expiresAt', message: `must be at or before ${until}, when the key making it expires` }],
    });
    // A key without an expiry may grant any.
    expect(keyGrant(key(['write']), spec({ expiresAt: '2099-01-01T00:00:00Z' }))).toMatchObject({ ok: true, grant: { expiresAt: '2099-01-01T00:00:00.000Z' } });
  });

  it('a portal session grants nothing', () => {
    expect(keyGrant({ kind: 'portal', account: 'acme', sessionId: 's', scopes: ['read', 'write'] }, spec())).toMatchObject({ ok: false });
  });
});

describe("a deleted account's purge", () => {
  it('is final only once late data can no longer arrive', () => {
    const tombstone = { deletedAt: '2026-11-25T12:00:00.000Z' };
    expect(purgeSettled(tombstone, new Date('2026-11-25T12:04:59.999Z'))).toBe(false);
    expect(purgeSettled(tombstone, new Date('2026-11-25T12:05:00.000Z'))).toBe(true);
    expect(purgeSettled(tombstone, NOW, 0)).toBe(true);
  });
});

describe('callers', () => {
  const key = { kind: 'key', account: 'acme', keyId: 'k1', scopes: ['read'] } as const;
  it('the operator reaches every account; a key only its own, with its scopes', () => {
    expect(reaches({ kind: 'operator' }, 'anyone')).toBe(true);
    expect(reaches(key, 'acme')).toBe(true);
    expect(reaches(key, 'globex')).toBe(false);
    expect(hasScope(key, scopeFor('GET'))).toBe(true);
    expect(hasScope(key, scopeFor('DELETE'))).toBe(false);
    expect(hasScope({ kind: 'operator' }, 'publish')).toBe(true);
  });
});

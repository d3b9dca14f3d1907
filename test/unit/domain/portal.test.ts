import { patchAccount, Account, accountPatchSchema } from '../../../shared/domain/access/account';
import { issuesFromZod } from '../../../shared/domain/events/event';
import {
  linkClaims,
  linkGrant,
  LINK_PREFIX,
  MAX_LOGO_BYTES,
  patchTheme,
  portalKeyOf,
  portalLinkSchema,
  portalScopes,
  portalSecretOf,
  portalThemeSchema,
  returnUrlSchema,
  SESSION_PREFIX,
  signLink,
  signSession,
  verifyPortalToken,
} from '../../../shared/domain/access/portal';
import { getAccountStats, latencyPercentiles, StatsAdminDeps, statsQuerySchema, statsSeries } from '../../../shared/app/admin/stats-admin';
import type { Destination } from '../../../shared/domain/destinations/destination';

const key = portalKeyOf(Buffer.alloc(32, 7));
const now = new Date('2026-11-26T00:00:00Z');
const claims = linkClaims('acme', { ttlSeconds: 600, readOnly: true, destinations: ['orders', 'billing', 'orders'], returnUrl: 'https://app.example.com/back' }, now, 'AAAAAAAAAAAAAAAAAAAAAA');

function issuesOf(schema: { safeParse(v: unknown): { success: boolean; error?: unknown } }, value: unknown): string[] {
  const parsed = schema.safeParse(value) as { success: boolean; error?: Parameters<typeof issuesFromZod>[0] };
  return parsed.success ? [] : issuesFromZod(parsed.error!).map((i) => `${i.path}: ${i.message}`);
}

describe('portal tokens', () => {
  test('a link verifies with its claims until it expires, then says expired with them', () => {
    expect(claims).toEqual({ id: 'AAAAAAAAAAAAAAAAAAAAAA', account: 'acme', readOnly: true, scopes: ['read'], destinations: ['billing', 'orders'], returnUrl: 'https://app.example.com/back', exp: now.getTime() / 1000 + 600 });
    const link = signLink(key, claims);
    expect(link.startsWith(LINK_PREFIX)).toBe(true);
    expect(verifyPortalToken(key, LINK_PREFIX, link, new Date(now.getTime() + 599_000))).toEqual({ ok: true, claims });
    expect(verifyPortalToken(key, LINK_PREFIX, link, new Date(now.getTime() + 600_000))).toEqual({ ok: false, reason: 'expired', claims });
  });

  test('tampered, truncated, foreign-keyed or garbage tokens are invalid, never expired', () => {
    const link = signLink(key, claims);
    const [body, sig] = link.slice(LINK_PREFIX.length).split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ ...claims, account: 'globex' })).toString('base64url');
    for (const bad of [`${LINK_PREFIX}${forged}.${sig}`, link.slice(0, -2), `${LINK_PREFIX}${body}`, `${link}.x`, signLink(portalKeyOf(Buffer.alloc(32, 8)), claims), 'garbage', '', 42, undefined, `${LINK_PREFIX}${'A'.repeat(20_000)}.x`]) {
      expect(verifyPortalToken(key, LINK_PREFIX, bad, now)).toEqual({ ok: false, reason: 'invalid' });
    }
    // A signature over claims that are not a portal's is refused too.
    const odd = Buffer.from(JSON.stringify({ hello: 'world' })).toString('base64url');
    const { createHmac } = jest.requireActual<typeof import('node:crypto')>('node:crypto');
    const signature = createHmac('sha256', key).update(LINK_PREFIX).update(odd).digest('base64url');
    expect(verifyPortalToken(key, LINK_PREFIX, `${LINK_PREFIX}${odd}.${signature}`, now)).toEqual({ ok: false, reason: 'invalid' });
  });

  test('a link is never a session and a session never a link; a session drops returnUrl and keeps the rest', () => {
    const link = signLink(key, claims);
    const session = signSession(key, claims, 'BBBBBBBBBBBBBBBBBBBBBB');
    expect(session.startsWith(SESSION_PREFIX)).toBe(true);
    expect(verifyPortalToken(key, SESSION_PREFIX, link, now)).toEqual({ ok: false, reason: 'invalid' });
    expect(verifyPortalToken(key, LINK_PREFIX, session, now)).toEqual({ ok: false, reason: 'invalid' });
    // The same body under the other prefix does not verify either: the prefix is signed.
    expect(verifyPortalToken(key, SESSION_PREFIX, SESSION_PREFIX + link.slice(LINK_PREFIX.length), now)).toEqual({ ok: false, reason: 'invalid' });
    const { returnUrl: _r, ...rest } = claims;
    expect(verifyPortalToken(key, SESSION_PREFIX, session, now)).toEqual({ ok: true, claims: { ...rest, sid: 'BBBBBBBBBBBBBBBBBBBBBB' } });
  });

  test('the key is derived: from the secrets key when set, else from the admin token digest; stable across instances', () => {
    const secretsKey = Buffer.alloc(32, 1).toString('base64');
    const admin = Buffer.alloc(32, 2);
    expect(portalSecretOf(`${secretsKey},${Buffer.alloc(32, 3).toString('base64')}`, admin)).toEqual(Buffer.alloc(32, 1));
    expect(portalSecretOf(undefined, admin)).not.toEqual(admin);
    expect(portalKeyOf(portalSecretOf(undefined, admin))).toEqual(portalKeyOf(portalSecretOf(undefined, Buffer.alloc(32, 2))));
    expect(portalKeyOf(Buffer.alloc(32, 1))).not.toEqual(Buffer.alloc(32, 1));
  });

  test('scopes: the token’s own; a token from before scopes: read, and write unless read-only', () => {
    expect(portalScopes({ readOnly: true })).toEqual(['read']);
    expect(portalScopes({ readOnly: false })).toEqual(['read', 'write']);
    expect(portalScopes({ readOnly: false, scopes: ['write'] })).toEqual(['write']);
    expect(portalScopes({ readOnly: true, scopes: ['read'] })).toEqual(['read']);
  });
});

describe('what a link may grant (issue 50: a write-only key minted links that read the whole account)', () => {
  const keyWith = (...scopes: string[]) => ({ kind: 'key' as const, scopes });

  test('the operator: what is asked, else read and write', () => {
    expect(linkGrant({ kind: 'operator' }, {})).toEqual({ ok: true, scopes: ['read', 'write'] });
    expect(linkGrant({ kind: 'operator' }, { readOnly: true })).toEqual({ ok: true, scopes: ['read'] });
    expect(linkGrant({ kind: 'operator' }, { scopes: ['write'] })).toEqual({ ok: true, scopes: ['write'] });
  });

  test('a key: only scopes it holds; asking none gives the default narrowed to its own', () => {
    expect(linkGrant(keyWith('write'), {})).toEqual({ ok: true, scopes: ['write'] });
    expect(linkGrant(keyWith('write', 'publish'), { scopes: ['write'] })).toEqual({ ok: true, scopes: ['write'] });
    expect(linkGrant(keyWith('read', 'write', 'publish'), {})).toEqual({ ok: true, scopes: ['read', 'write'] });
    expect(linkGrant(keyWith('read', 'write'), { readOnly: true })).toEqual({ ok: true, scopes: ['read'] });
    expect(linkGrant(keyWith('write', 'read'), { scopes: ['write', 'read', 'write'] })).toEqual({ ok: true, scopes: ['read', 'write'] });
    const readOnly = linkGrant(keyWith('write'), { readOnly: true });
    expect(readOnly).toEqual({
      ok: false,
      error: 'this key cannot grant "read" to a portal link: a key may grant only the scopes it holds (write); leave scopes and readOnly out to grant write, or mint the link with the admin token or a key that holds "read"',
      issues: [{ path: 'readOnly', message: '"read" is not a scope of the key minting the link (it holds write)' }],
    });
    expect(linkGrant(keyWith('write'), { readOnly: false })).toMatchObject({ ok: false, issues: [{ path: 'readOnly' }] });
    expect(linkGrant(keyWith('write', 'publish'), { scopes: ['read', 'write'] })).toMatchObject({ ok: false, error: expect.stringMatching(/^this key cannot grant "read"/) as unknown, issues: [{ path: 'scopes' }] });
    expect(linkGrant(keyWith('publish'), {})).toMatchObject({ ok: false, error: expect.stringMatching(/holds neither "read" nor "write"/) as unknown });
  });

  test('a portal session grants nothing', () => {
    expect(linkGrant({ kind: 'portal' }, {})).toMatchObject({ ok: false });
  });

  test('the claims carry the granted scopes; readOnly says whether write is among them', () => {
    expect(linkClaims('acme', { ttlSeconds: 60, scopes: ['write'] }, now, 'A'.repeat(22))).toMatchObject({ readOnly: false, scopes: ['write'] });
    expect(linkClaims('acme', { ttlSeconds: 60 }, now, 'A'.repeat(22))).toMatchObject({ readOnly: false, scopes: ['read', 'write'] });
    const session = signSession(key, linkClaims('acme', { ttlSeconds: 60, scopes: ['write'] }, now, 'A'.repeat(22)), 'B'.repeat(22));
    const verdict = verifyPortalToken(key, SESSION_PREFIX, session, now);
    expect(verdict.ok && portalScopes(verdict.claims)).toEqual(['write']);
  });
});

describe('returnUrl (issue 50: http was taken for any host starting "127.")', () => {
  test('http only to a loopback host: 127.0.0.0/8 as an address, localhost, [::1]; https to any', () => {
    for (const ok of ['https://app.example.com/back', 'https://127.evil.com/x', 'http://127.0.0.1:3000/x', 'http://127.4.5.6/x', 'http://127.1/x', 'http://localhost/x', 'http://localhost:8080/x', 'http://[::1]:3000/x']) {
      expect([ok, returnUrlSchema.safeParse(ok).success]).toEqual([ok, true]);
    }
    for (const bad of ['http://127.evil.com/x', 'http://127.0.0.1.nip.io/x', 'http://127.0.0.1.evil.com/', 'http://localhost.evil.com/', 'http://128.0.0.1/', 'http://[::2]/', 'http://app.example.com/', 'ftp://127.0.0.1/', 'javascript:alert(1)', '/relative']) {
      expect([bad, returnUrlSchema.safeParse(bad).success]).toEqual([bad, false]);
    }
  });
});

describe('portal link requests', () => {
  test('valid requests: scopes or readOnly, each optional', () => {
    expect(portalLinkSchema.parse({ ttlSeconds: 60 })).toEqual({ ttlSeconds: 60 });
    expect(portalLinkSchema.parse({ ttlSeconds: 60, scopes: ['write'], maxSessions: 1 })).toEqual({ ttlSeconds: 60, scopes: ['write'], maxSessions: 1 });
    expect(portalLinkSchema.safeParse({ ttlSeconds: 86_400, readOnly: true, destinations: ['a'], returnUrl: 'http://127.0.0.1:3000/x' }).success).toBe(true);
    expect(portalLinkSchema.safeParse({ ttlSeconds: 300, returnUrl: 'http://localhost/x' }).success).toBe(true);
  });

  test('every problem named precisely', () => {
    expect(issuesOf(portalLinkSchema, { ttlSeconds: 59, readOnly: 'yes', destinations: [], returnUrl: 'http://app.example.com', colour: 'red' })).toEqual([
      'ttlSeconds: ttlSeconds must be at least 60',
      'readOnly: readOnly must be true or false',
      'destinations: destinations must name at least one destination, or be left out for all of them',
      'returnUrl: returnUrl must be an absolute https URL (http only for localhost, 127.0.0.0/8 or [::1])',
      ': unknown field colour',
    ]);
    expect(issuesOf(portalLinkSchema, { ttlSeconds: 600.5, destinations: ['Not An Id'], returnUrl: 'javascript:alert(1)' })).toEqual([
      'ttlSeconds: ttlSeconds must be a whole number of seconds',
      'destinations[0]: a destination must be a destination id: 1-63 lowercase letters, digits and hyphens',
      'returnUrl: returnUrl must be an absolute https URL (http only for localhost, 127.0.0.0/8 or [::1])',
    ]);
    expect(issuesOf(portalLinkSchema, { ttlSeconds: 86_401 })).toEqual(['ttlSeconds: ttlSeconds must be at most 86400 (a day)']);
    expect(issuesOf(portalLinkSchema, {})).toEqual(['ttlSeconds: ttlSeconds must be a number of seconds from 60 to 86400']);
    expect(issuesOf(portalLinkSchema, { ttlSeconds: 60, destinations: Array.from({ length: 101 }, (_, i) => `d${i}`) })).toEqual(['destinations: destinations may name at most 100']);
    expect(issuesOf(portalLinkSchema, { ttlSeconds: 60, readOnly: true, scopes: ['read'] })).toEqual(['readOnly: give scopes or readOnly, not both: readOnly true is scopes ["read"]']);
    expect(issuesOf(portalLinkSchema, { ttlSeconds: 60, scopes: ['publish'], maxSessions: 0 })).toEqual(['scopes[0]: a portal scope is "read" or "write"', 'maxSessions: maxSessions must be at least 1']);
    expect(issuesOf(portalLinkSchema, { ttlSeconds: 60, scopes: [], maxSessions: 101 })).toEqual(['scopes: scopes must name at least one of "read" and "write", or be left out', 'maxSessions: maxSessions must be at most 100']);
  });
});

describe('portal theme', () => {
  const png = (bytes: number) => `data:image/png;base64,${Buffer.alloc(bytes, 1).toString('base64')}`;

  test('colour, https or data logo up to 64 KB, display name', () => {
    expect(portalThemeSchema.safeParse({ brandColor: '#0A66C2', logoUrl: 'https://cdn.example.com/logo.svg', displayName: ' Acme ' }).success).toBe(true);
    expect(portalThemeSchema.safeParse({ logoUrl: png(MAX_LOGO_BYTES) }).success).toBe(true);
    expect(portalThemeSchema.safeParse({ logoUrl: `data:image/svg+xml;base64,${Buffer.from('<svg/>').toString('base64')}` }).success).toBe(true);
    expect(issuesOf(portalThemeSchema, { brandColor: 'red', logoUrl: png(MAX_LOGO_BYTES + 1), displayName: '' })).toEqual([
      'brandColor: portal.brandColor must be a colour #RRGGBB, e.g. #0a66c2',
      'logoUrl: portal.logoUrl: the image must be at most 64 KB',
      'displayName: portal.displayName must not be empty',
    ]);
    expect(issuesOf(portalThemeSchema, { logoUrl: 'http://cdn.example.com/logo.png' })).toEqual(['logoUrl: portal.logoUrl must be an https URL, or a data:image/png or data:image/svg+xml base64 URL']);
    expect(issuesOf(portalThemeSchema, { logoUrl: 'data:text/html;base64,PGgxPg==' })).toEqual(['logoUrl: portal.logoUrl as a data URL must be data:image/png;base64,… or data:image/svg+xml;base64,…']);
  });

  test('PATCH sets, null removes a field or the whole theme', () => {
    expect(patchTheme(undefined, { brandColor: '#AABBCC', displayName: 'Acme' })).toEqual({ brandColor: '#aabbcc', displayName: 'Acme' });
    expect(patchTheme({ brandColor: '#aabbcc', displayName: 'Acme' }, { displayName: null })).toEqual({ brandColor: '#aabbcc' });
    expect(patchTheme({ brandColor: '#aabbcc' }, { brandColor: null })).toBeUndefined();
    expect(patchTheme({ brandColor: '#aabbcc' }, null)).toBeUndefined();
    const account: Account = { id: 'acme', name: 'Acme', settings: {}, createdAt: now.toISOString(), updatedAt: now.toISOString() };
    const themed = patchAccount(account, accountPatchSchema.parse({ portal: { brandColor: '#112233' } }), now);
    expect(themed.portal).toEqual({ brandColor: '#112233' });
    expect(patchAccount(themed, accountPatchSchema.parse({ portal: null }), now).portal).toBeUndefined();
    expect(patchAccount(themed, accountPatchSchema.parse({ name: 'Acme Inc' }), now).portal).toEqual({ brandColor: '#112233' });
  });
});

describe('overview series', () => {
  test('counter buckets summed into the window, oldest first, empty points included', () => {
    const minute = 60_000;
    const at = Date.parse('2026-11-26T01:00:30Z');
    const buckets = [
      { destinationId: 'a', start: at - 30_000, attempts: 3, successes: 2, failures: 1, settled: { dead: 1 } },
      { destinationId: 'b', start: at - 30_000, attempts: 1, successes: 1, failures: 0, settled: { dead: 1, queued: 2 } },
      { destinationId: 'a', start: at - 30_000 - 59 * minute, attempts: 5, successes: 5, failures: 0 },
      { destinationId: 'a', start: at - 30_000 - 60 * minute, attempts: 7, successes: 7, failures: 0 },
    ];
    const hour = statsSeries(buckets, at, 3_600_000, 60, minute);
    expect(hour.bucketMs).toBe(minute);
    expect(hour.series).toHaveLength(60);
    expect(hour.series[59]).toEqual({ start: '2026-11-26T01:00:00.000Z', attempts: 4, successes: 3, failures: 1, dead: 2, queued: 2 });
    expect(hour.series[0]).toEqual({ start: '2026-11-26T00:01:00.000Z', attempts: 5, successes: 5, failures: 0, dead: 0, queued: 0 });
    expect(hour.series.reduce((n, p) => n + p.attempts, 0)).toBe(9);
    const day = statsSeries(buckets, at, 86_400_000, 96, minute);
    expect(day.bucketMs).toBe(15 * minute);
    expect(day.series).toHaveLength(96);
    expect(day.series.reduce((n, p) => n + p.attempts, 0)).toBe(16);
  });

  test('latency percentiles per point and over the window, from the buckets\' histograms; none where no latency was recorded', () => {
    const minute = 60_000;
    const at = Date.parse('2026-11-26T01:00:30Z');
    const buckets = [
      // Two shards' worth in the last minute: 98 attempts in (30, 50] ms, 2 in (1, 1.5] s.
      { destinationId: 'a', start: at - 30_000, attempts: 60, successes: 60, failures: 0, latency: { b06: 59, b15: 1 } },
      { destinationId: 'b', start: at - 30_000, attempts: 40, successes: 40, failures: 0, latency: { b06: 39, b15: 1 } },
      // Ten minutes before: 10 attempts in (100, 150] ms.
      { destinationId: 'a', start: at - 30_000 - 10 * minute, attempts: 10, successes: 10, failures: 0, latency: { b09: 10 } },
      // Counted before latencies were: no percentile.
      { destinationId: 'a', start: at - 30_000 - 20 * minute, attempts: 4, successes: 4, failures: 0 },
    ];
    const hour = statsSeries(buckets, at, 3_600_000, 60, minute);
    // The 50th of 98 in (30, 50]: 30 + 20 · 50/98; the 99th, the first of 2 in (1000, 1500]: half way.
    expect(hour.series[59]).toMatchObject({ attempts: 100, p50Ms: 40.2, p99Ms: 1250 });
    expect(hour.series[49]).toMatchObject({ attempts: 10, p50Ms: 125, p99Ms: 150 });
    expect(hour.series[39]).toEqual({ start: '2026-11-26T00:40:00.000Z', attempts: 4, successes: 4, failures: 0, dead: 0, queued: 0 });
    expect(hour.series[0]).not.toHaveProperty('p50Ms');
    expect(hour.latency).toEqual({ b06: 98, b09: 10, b15: 2 });
    expect(latencyPercentiles(hour.latency)).toEqual({ p50: 41.2, p99: 1250 });
    expect(latencyPercentiles({})).toBeUndefined();
  });

  describe('GET /admin/accounts/{id}/stats', () => {
    const minute = 60_000;
    const at = new Date('2026-11-26T01:00:30Z');
    const operator = { kind: 'operator' } as unknown as Parameters<typeof getAccountStats>[1];
    const destinations = ['acme_orders', 'acme_billing', 'other_orders'].map((id) => ({ id })) as unknown as Destination[];
    const asked: string[] = [];
    const deps: StatsAdminDeps = {
      destinations: { listAccount: async (account) => destinations.filter((d) => d.id.startsWith(`${account}_`)) },
      deliveries: { countByStatus: async (ids) => ids.length },
      counters: {
        series: async (ids) => {
          asked.push(...ids);
          return new Map(ids.map((id) => [id, [{ destinationId: id, start: at.getTime() - 30_000, attempts: 2, successes: 2, failures: 0, latency: id === 'acme_orders' ? { b03: 2 } : { b12: 2 } }]]));
        },
        rollupShape: { bucketMs: minute, minutesMs: 62 * minute, coarseMs: 15 * minute, dayMs: 1440 * minute },
      },
      clock: { now: () => at },
      counterBucketMs: minute,
      timeScale: 1,
    };

    test('every destination the caller sees, or one by its id: its series and latency alone', async () => {
      asked.length = 0;
      const all = await getAccountStats(deps, operator, 'acme', {});
      expect(asked.sort()).toEqual(['acme_billing', 'acme_orders']);
      expect(all).toMatchObject({ kind: 'ok', body: { window: '1h', successRate: 1, latencyMs: { p50: 15, p99: 500 }, queued: 2, dead: 2 } });
      expect((all as { body: object }).body).not.toHaveProperty('destination');
      asked.length = 0;
      const one = await getAccountStats(deps, operator, 'acme', { window: '24h', destination: 'orders' });
      expect(asked).toEqual(['acme_orders']);
      expect(one).toMatchObject({ kind: 'ok', body: { window: '24h', destination: 'orders', latencyMs: { p50: 12.5, p99: 15 }, queued: 1, dead: 1 } });
      expect((one as { body: { series: { p50Ms?: number }[] } }).body.series.at(-1)).toMatchObject({ attempts: 2, p50Ms: 12.5, p99Ms: 15 });
    });

    test('counts=false leaves out the queued and dead counts: no count aggregation is made', async () => {
      const counted: string[][] = [];
      const spy: StatsAdminDeps = { ...deps, deliveries: { countByStatus: async (ids) => (counted.push([...ids]), 0) } };
      const sparkline = await getAccountStats(spy, operator, 'acme', { destination: 'orders', counts: 'false' });
      expect(sparkline).toMatchObject({ kind: 'ok', body: { destination: 'orders', successRate: 1 } });
      expect((sparkline as { body: object }).body).not.toHaveProperty('queued');
      expect(counted).toEqual([]);
      expect(issuesOf(statsQuerySchema, { counts: 'no' })).toEqual(['counts: counts must be "true" or "false"']);
    });

    test('an unknown destination, or one the caller may not see: 404 as on the destination routes; a malformed one: 400, said precisely', async () => {
      expect(await getAccountStats(deps, operator, 'acme', { destination: 'nope' })).toEqual({ kind: 'not-found', body: { error: 'no destination "acme_nope"; list them with GET /admin/destinations' } });
      const narrowed = { kind: 'portal', account: 'acme', destinations: ['billing'] } as unknown as Parameters<typeof getAccountStats>[1];
      expect(await getAccountStats(deps, narrowed, 'acme', { destination: 'orders' })).toMatchObject({ kind: 'not-found' });
      expect(await getAccountStats(deps, narrowed, 'acme', { destination: 'billing' })).toMatchObject({ kind: 'ok', body: { destination: 'billing' } });
      expect(issuesOf(statsQuerySchema, { destination: 'Orders!' })).toEqual(['destination: destination must be a destination id: 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit']);
      expect(issuesOf(statsQuerySchema, { destination: ['a', 'b'] })).toEqual(['destination: destination must be one destination id, given once']);
      expect(issuesOf(statsQuerySchema, { window: '1h', dest: 'a' })).toEqual([expect.stringContaining('the query takes window (1h or 24h), destination (a destination id) and counts (true or false) only')]);
      expect(await getAccountStats(deps, operator, 'acme', { destination: 'Orders!' })).toMatchObject({ kind: 'invalid', body: { error: 'invalid query', issues: [{ path: 'destination' }] } });
    });
  });
});

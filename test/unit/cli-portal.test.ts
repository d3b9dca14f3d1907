import { harness, Sent } from '../support/cli-harness';

/**
 * `herald portal links list|revoke` and `herald portal sessions list|revoke|revoke-all`,
 * in-process against scripted answers: where each goes, what it prints, what a refusal says.
 */

const URL0 = 'http://127.0.0.1:8080';
const KEY = `hk_0123456789abcdef_${'A'.repeat(43)}`;
const LINK = 'CHZI5f8fb3e_m4_hmnN_CA';
const SESSION = '24o_KFXSufFUx4uGUps9Mw';

const json = (body: unknown, status = 200) => () => Response.json(body, { status });
const noContent = () => new Response(null, { status: 204 });
const sentTo = (sent: Sent[]) => sent.map((s) => `${s.method} ${s.url.replace(URL0, '')}`);

const links = [
  { id: LINK, account: 'acme', mintedBy: 'admin', readOnly: true, destinations: ['orders'], createdAt: '2026-11-26T01:00:00.000Z', expiresAt: '2026-11-26T02:00:00.000Z', sessions: [{ id: SESSION, createdAt: '2026-11-26T01:00:05.000Z', expiresAt: '2026-11-26T02:00:00.000Z' }] },
  { id: 'inyTqd75tTqv4shycUidvA', account: 'acme', mintedBy: '0123456789abcdef', readOnly: false, createdAt: '2026-11-26T00:30:00.000Z', expiresAt: '2026-11-26T03:00:00.000Z', sessions: [] },
];
const sessions = [{ id: SESSION, linkId: LINK, mintedBy: 'admin', readOnly: true, destinations: ['orders'], createdAt: '2026-11-26T01:00:05.000Z', expiresAt: '2026-11-26T02:00:00.000Z' }];

describe('herald portal links', () => {
  test('list: a table of live links with their rights and open sessions; --json the answer; none says so', async () => {
    const h = harness(json({ links }));
    expect(await h.run(['portal', 'links', 'list', 'acme'])).toBe(0);
    expect(sentTo(h.sent)).toEqual(['GET /admin/accounts/acme/portal-links']);
    expect(h.sent[0]!.headers.authorization).toBe('Bearer admin-token');
    expect(h.stdout()).toBe(
      [
        'ID                      MINTED BY         RIGHTS         SESSIONS  CREATED AT                EXPIRES AT',
        'CHZI5f8fb3e_m4_hmnN_CA  admin             read (orders)  1         2026-11-26T01:00:00.000Z  2026-11-26T02:00:00.000Z',
        'inyTqd75tTqv4shycUidvA  0123456789abcdef  read,write     0         2026-11-26T00:30:00.000Z  2026-11-26T03:00:00.000Z',
        '',
      ].join('\n'),
    );
    const j = harness(json({ links }));
    expect(await j.run(['portal', 'links', 'list', 'acme', '--json'], { env: { HERALD_API_KEY: KEY } })).toBe(0);
    expect(j.sent[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(JSON.parse(j.stdout())).toEqual(links);
    const none = harness(json({ links: [] }));
    expect(await none.run(['portal', 'links', 'list', 'acme'])).toBe(0);
    expect(none.stderr()).toBe('account acme has no live portal links\n');
  });

  test('revoke: DELETE of the link; a missing one says how to list them; a bad id is a usage error', async () => {
    const h = harness(noContent);
    expect(await h.run(['portal', 'links', 'revoke', 'acme', LINK])).toBe(0);
    expect(sentTo(h.sent)).toEqual([`DELETE /admin/accounts/acme/portal-links/${LINK}`]);
    expect(h.stderr()).toBe(`revoked portal link ${LINK} of account acme and every session opened from it: Herald refuses them everywhere within 5 s\n`);
    const missing = harness(json({ error: `no portal link "${LINK}" in account "acme"; list them with GET /admin/accounts/acme/portal-links` }, 404));
    expect(await missing.run(['portal', 'links', 'revoke', 'acme', LINK])).toBe(1);
    expect(missing.stderr()).toBe(`herald: no portal link "${LINK}" in account "acme"\nhint: see the live ones with: herald portal links list acme\n`);
    const bad = harness();
    expect(await bad.run(['portal', 'links', 'revoke', 'Acme', 'x/y'])).toBe(2);
    expect(bad.stderr()).toContain('  - <account>: an account id is');
    expect(bad.stderr()).toContain('  - <link-id>: a link id is 16 to 64 letters, digits, - and _, as herald portal links list shows it\n');
    expect(bad.sent).toHaveLength(0);
  });
});

describe('herald portal sessions', () => {
  test('list: a table of live sessions with their link', async () => {
    const h = harness(json({ sessions }));
    expect(await h.run(['portal', 'sessions', 'list', 'acme'])).toBe(0);
    expect(sentTo(h.sent)).toEqual(['GET /admin/accounts/acme/portal-sessions']);
    expect(h.stdout()).toBe(
      [
        'ID                      LINK                    MINTED BY  RIGHTS         CREATED AT                EXPIRES AT',
        '24o_KFXSufFUx4uGUps9Mw  CHZI5f8fb3e_m4_hmnN_CA  admin      read (orders)  2026-11-26T01:00:05.000Z  2026-11-26T02:00:00.000Z',
        '',
      ].join('\n'),
    );
    const none = harness(json({ sessions: [] }));
    expect(await none.run(['portal', 'sessions', 'list', 'acme'])).toBe(0);
    expect(none.stderr()).toBe('account acme has no live portal sessions\n');
  });

  test('revoke: DELETE of the session; a missing one says how to list them', async () => {
    const h = harness(noContent);
    expect(await h.run(['portal', 'sessions', 'revoke', 'acme', SESSION])).toBe(0);
    expect(sentTo(h.sent)).toEqual([`DELETE /admin/accounts/acme/portal-sessions/${SESSION}`]);
    expect(h.stderr()).toBe(`revoked portal session ${SESSION} of account acme: Herald refuses it everywhere within 5 s\n`);
    const missing = harness(json({ error: 'no portal session' }, 404));
    expect(await missing.run(['portal', 'sessions', 'revoke', 'acme', SESSION])).toBe(1);
    expect(missing.stderr()).toBe(`herald: no portal session "${SESSION}" in account "acme"\nhint: see the live ones with: herald portal sessions list acme\n`);
  });

  test('revoke-all: POST …/portal-sessions/revoke, and what it ended', async () => {
    const answer = { endedAt: '2026-11-26T01:30:00.000Z', links: 2, sessions: 3 };
    const h = harness(json(answer));
    expect(await h.run(['portal', 'sessions', 'revoke-all', 'acme'])).toBe(0);
    expect(sentTo(h.sent)).toEqual(['POST /admin/accounts/acme/portal-sessions/revoke']);
    expect(h.stderr()).toBe('ended every portal session of account acme as of 2026-11-26T01:30:00.000Z (3 live session(s), 2 live link(s)): Herald refuses them everywhere within 5 s\n');
    const j = harness(json(answer));
    expect(await j.run(['portal', 'sessions', 'revoke-all', 'acme', '--json'])).toBe(0);
    expect(JSON.parse(j.stdout())).toEqual(answer);
    // A portal session or a key without write: Herald's refusal, said as it is.
    const refused = harness(json({ error: 'this key lacks the "write" scope; create a key with it (POST /admin/accounts/acme/keys)' }, 403));
    expect(await refused.run(['portal', 'sessions', 'revoke-all', 'acme'], { env: { HERALD_API_KEY: KEY } })).toBe(1);
    expect(refused.stderr()).toContain('herald: this key lacks the "write" scope');
    const odd = harness(json({ ended: true }));
    expect(await odd.run(['portal', 'sessions', 'revoke-all', 'acme'])).toBe(1);
    expect(odd.stderr()).toContain('answered an unexpected body');
  });
});

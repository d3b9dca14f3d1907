import { harness } from '../support/cli-harness';

/** `herald usage`: what it asks (path and query), what it prints (table, CSV, JSON), and arguments refused before anything is sent. */

const ENV = { env: { HERALD_ADMIN_TOKEN: 'admin-token' } };
const DAY = { date: '2026-11-02', eventsAccepted: 120, eventsRefused: 3, operationalEvents: 2, deliveries: 240, attempts: { success: 236, 'http-error': 9 }, delivered: 236, bytesSent: 51234, modeledCostUsd: 0.000123 };

test('an account over a range: the route, the query, a row a day with attempts by outcome', async () => {
  const h = harness(() => Response.json({ account: 'acme', from: '2026-11-02', to: '2026-11-02', granularity: 'day', days: [DAY] }));
  expect(await h.run(['usage', 'acme', '--from', '2026-11-02', '--to', '2026-11-02'], ENV)).toBe(0);
  expect(h.sent[0]!.url).toBe('http://127.0.0.1:8080/admin/accounts/acme/usage?from=2026-11-02&to=2026-11-02');
  expect(h.stdout()).toMatch(/2026-11-02\s+120\s+3\s+2\s+240\s+236\s+success 236, http-error 9\s+51234\s+\$0\.000123/);
});

test('--csv prints the API\'s CSV; --month asks for months; --all asks every account', async () => {
  const h = harness(() => Response.json({ days: [DAY] }));
  expect(await h.run(['usage', 'acme', '--month', '--csv'], ENV)).toBe(0);
  expect(new URL(h.sent[0]!.url).searchParams.get('granularity')).toBe('month');
  expect(h.stdout().split('\n')[1]).toBe('2026-11-02,120,3,2,240,236,9,0,0,0,236,51234,0.000123');
  const all = harness(() => Response.json({ from: '2026-11-01', to: '2026-11-30', accounts: [{ ...DAY, account: 'acme' }] }));
  expect(await all.run(['usage', '--all', '--json'], ENV)).toBe(0);
  expect(new URL(all.sent[0]!.url).pathname).toBe('/admin/usage');
  expect(JSON.parse(all.stdout())).toMatchObject({ accounts: [{ account: 'acme', eventsAccepted: 120 }] });
});

test('a day that is not one, or neither an account nor --all: exit 2, nothing sent', async () => {
  const h = harness();
  expect(await h.run(['usage', 'acme', '--from', '2026-02-30'], ENV)).toBe(2);
  expect(h.stderr()).toMatch(/--from must be a calendar day as YYYY-MM-DD/);
  expect(await h.run(['usage'], ENV)).toBe(2);
  expect(h.stderr()).toMatch(/name the account/);
  expect(h.sent).toHaveLength(0);
});

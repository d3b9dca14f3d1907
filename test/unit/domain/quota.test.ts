import { accountPatchSchema, newAccount, patchAccount } from '../../../shared/domain/access/account';
import { issuesFromZod } from '../../../shared/domain/events/event';
import { admitStep, afterTake, HELD_TOKENS_MS, leaseOf, quotasOf, retryAfterSeconds, sliceOf, takeFromBucket } from '../../../shared/domain/intake/quota';

const DEFAULTS = { publishPerSecond: 1000, destinations: 100 };
const NOW = new Date('2026-11-25T12:00:00Z');

describe('quotasOf', () => {
  it("an account's own quotas, else the deployment's; default has none unless set; 0 means none", () => {
    expect(quotasOf('acme', undefined, DEFAULTS)).toEqual(DEFAULTS);
    expect(quotasOf('acme', { quotas: { publishPerSecond: 5 } }, DEFAULTS)).toEqual({ publishPerSecond: 5, destinations: 100 });
    expect(quotasOf('default', undefined, DEFAULTS)).toEqual({});
    expect(quotasOf('default', { quotas: { destinations: 3 } }, DEFAULTS)).toEqual({ destinations: 3 });
    expect(quotasOf('acme', undefined, { publishPerSecond: 0, destinations: 0 })).toEqual({});
  });

  it('the operator sets them with PATCH; null returns one to the default; bad values are named', () => {
    const acme = newAccount('acme', { name: 'Acme' }, NOW);
    const set = patchAccount(acme, accountPatchSchema.parse({ quotas: { publishPerSecond: 50, destinations: 10 } }), NOW);
    expect(set.quotas).toEqual({ publishPerSecond: 50, destinations: 10 });
    const back = patchAccount(set, accountPatchSchema.parse({ quotas: { publishPerSecond: null } }), NOW);
    expect(back.quotas).toEqual({ destinations: 10 });
    expect(patchAccount(back, accountPatchSchema.parse({ quotas: { destinations: null } }), NOW)).not.toHaveProperty('quotas');
    const bad = accountPatchSchema.safeParse({ quotas: { publishPerSecond: 0.5, destinations: -1, burst: 3 } });
    expect(bad.success).toBe(false);
    expect(issuesFromZod(bad.error!)).toEqual(
      expect.arrayContaining([
        { path: 'quotas.publishPerSecond', message: 'quotas.publishPerSecond must be a whole number' },
        { path: 'quotas.destinations', message: 'quotas.destinations must be at least 1' },
      ]),
    );
  });
});

describe("the account's shared bucket", () => {
  it('starts full (one second of the quota), refills at the quota, never past one second of it', () => {
    let b = takeFromBucket(undefined, 30, 50, 10_000);
    expect(b.granted).toBe(30);
    b = takeFromBucket(b.doc, 30, 50, 10_000);
    expect(b.granted).toBe(20);
    expect(takeFromBucket(b.doc, 5, 50, 10_000).granted).toBe(0);
    // 100 ms refills 5.
    expect(takeFromBucket(b.doc, 10, 50, 10_100).granted).toBe(5);
    // An idle minute refills one second's worth, no more.
    expect(takeFromBucket(b.doc, 500, 50, 70_000).granted).toBe(50);
  });

  it('an instance takes what it spends over a few seconds (a slice at most), takes ahead below half of it, and refuses without asking while the bucket is empty', () => {
    expect(sliceOf(50)).toBe(13);
    expect(sliceOf(3)).toBe(1);
    const t = 100_000;
    // No demand measured yet: what the request needs.
    const first = admitStep(undefined, 1, 40, t);
    expect(first).toMatchObject({ kind: 'take', want: 1 });
    const held = afterTake(first.allowance, 10, 10, 40, t);
    expect(held).toEqual({ tokens: 10, validUntil: t + HELD_TOKENS_MS, lease: 10, spent: 0, since: t });
    expect(admitStep(held, 1, 40, t + 1)).toMatchObject({ kind: 'admit', allowance: { tokens: 9, spent: 1 }, prefetch: 0 });
    // Below half the last lease: the next is taken ahead, sized by demand (5 spent in 2 s: 2.5/s, 13 over 5 s; a slice of 100/s is 25).
    expect(admitStep({ ...held, tokens: 5, spent: 4 }, 1, 100, t + 2000)).toMatchObject({ kind: 'admit', allowance: { tokens: 4 }, prefetch: 13 });
    // A slice at most (10 of 40/s), however busy; demand is measured over a second at least.
    expect(leaseOf({ ...held, spent: 400 }, 40, t + 2000)).toBe(sliceOf(40));
    expect(leaseOf({ ...held, spent: 2 }, 40, t + 10)).toBe(10);
    expect(leaseOf({ ...held, spent: 0 }, 40, t + 3000)).toBe(1);
    // The bucket gave 2 of 10: not asked again until 8 have refilled (200 ms at 40/s).
    const short = afterTake({ tokens: 0, validUntil: t + HELD_TOKENS_MS }, 10, 2, 40, t);
    expect(short).toEqual({ tokens: 2, validUntil: t + HELD_TOKENS_MS, emptyUntil: t + 200, lease: 10, spent: 0, since: t });
    expect(admitStep(short, 3, 40, t + 10)).toMatchObject({ kind: 'refuse', why: 'spent', retryAfterMs: 190 });
    expect(admitStep(short, 2, 40, t + 10)).toMatchObject({ kind: 'admit', prefetch: 0 });
    expect(admitStep(short, 3, 40, t + 200)).toMatchObject({ kind: 'take' });
    // Refusing: past its share, the next take is a slice (and a short one waits for it to refill); a whole grant ends that.
    const refusing = admitStep(short, 3, 40, t + 10);
    expect(refusing.allowance).toMatchObject({ refused: 3 });
    expect(leaseOf(refusing.allowance, 40, t + 200)).toBe(sliceOf(40));
    expect(afterTake(refusing.allowance, 10, 4, 40, t + 200)).toMatchObject({ refused: 3, emptyUntil: t + 350 });
    expect(afterTake(refusing.allowance, 10, 10, 40, t + 200)).not.toHaveProperty('refused');
    // Tokens held too long are given up.
    expect(admitStep(held, 1, 40, t + HELD_TOKENS_MS + 1)).toMatchObject({ kind: 'take' });
    expect(admitStep(undefined, 41, 40, t)).toMatchObject({ kind: 'refuse', why: 'too-big' });
  });

  it('Retry-After is whole seconds, at least 1', () => {
    expect(retryAfterSeconds(190)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
  });
});

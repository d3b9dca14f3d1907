import { ExchangeLimiter, INSTANCE_EXCHANGES, LINK_EXCHANGES } from '../../../shared/domain/access/portal-exchange-limit';

/**
 * The public portal link exchange's rate limit (issue 50: it wrote a session document per call
 * without any): one bucket per link, one for the instance, the time passed in.
 */

const T0 = Date.parse('2026-11-26T00:00:00Z');
const LINK = 'link-aaaaaaaaaaaaaaaa';

function takeAll(limiter: ExchangeLimiter, link: string, at: number): number {
  let n = 0;
  while (limiter.admit(link, at).ok) n++;
  return n;
}

describe('one link', () => {
  test('a burst, then refused with how long to wait, then one exchange per refill', () => {
    const limiter = new ExchangeLimiter();
    expect(takeAll(limiter, LINK, T0)).toBe(LINK_EXCHANGES.burst);
    const perExchangeMs = 60_000 / LINK_EXCHANGES.perMinute;
    expect(limiter.admit(LINK, T0)).toEqual({ ok: false, limit: 'link', retryAfterSeconds: perExchangeMs / 1000 });
    expect(limiter.admit(LINK, T0 + perExchangeMs / 2)).toEqual({ ok: false, limit: 'link', retryAfterSeconds: perExchangeMs / 2000 });
    expect(limiter.admit(LINK, T0 + perExchangeMs)).toEqual({ ok: true });
    expect(limiter.admit(LINK, T0 + perExchangeMs)).toMatchObject({ ok: false, limit: 'link' });
    // Refilled, never past the burst.
    expect(takeAll(limiter, LINK, T0 + 3_600_000)).toBe(LINK_EXCHANGES.burst);
  });

  test('another link has a bucket of its own; a clock going back refills nothing', () => {
    const limiter = new ExchangeLimiter();
    takeAll(limiter, LINK, T0);
    expect(limiter.admit('link-bbbbbbbbbbbbbbbb', T0)).toEqual({ ok: true });
    expect(limiter.admit(LINK, T0 - 60_000)).toMatchObject({ ok: false, limit: 'link' });
  });

  test('past the links it keeps, the least recently seen is dropped (and starts full)', () => {
    const limiter = new ExchangeLimiter({ link: { burst: 1, perMinute: 1 }, instance: { burst: 1000, perMinute: 1000 } }, 2);
    for (const l of ['a', 'b', 'a', 'c']) limiter.admit(`link-${l}`, T0);
    // b went first (a was seen again after it): b starts full again, a does not.
    expect(limiter.admit('link-b', T0)).toEqual({ ok: true });
    expect(limiter.admit('link-c', T0)).toMatchObject({ ok: false });
  });
});

describe('the instance', () => {
  test('every link together: refused past the instance burst, with its own wait; a link refused spends none of it', () => {
    const limiter = new ExchangeLimiter();
    let opened = 0;
    for (let i = 0; opened < INSTANCE_EXCHANGES.burst; i++) if (limiter.admit(`link-${i}`, T0).ok) opened++;
    expect(limiter.admit('link-one-more', T0)).toEqual({ ok: false, limit: 'instance', retryAfterSeconds: 1 });
    const fresh = new ExchangeLimiter();
    takeAll(fresh, LINK, T0);
    for (let i = 0; i < 100; i++) expect(fresh.admit(LINK, T0)).toMatchObject({ ok: false, limit: 'link' });
    expect(takeAll(fresh, 'link-other', T0)).toBe(LINK_EXCHANGES.burst);
  });
});

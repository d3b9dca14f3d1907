import { RATE_LIMITS } from '../../../shared/domain/rate/rate-doc';
import { LEASED_QUIET_MS, leaseShowsThrottle, NO_UNLEASED_SENDS, takeSendMode, throttled, THROTTLE_COOL_DOWN_MS, UnleasedSends, unleasedAllowance, withdrawSend } from '../../../shared/domain/rate/unleased-sends';

const T = 1_800_000_000_000;

/** The modes of deliveries asking for turns at `times`, in order, from `state`. */
function modes(times: number[], state: UnleasedSends = NO_UNLEASED_SENDS, bounds = RATE_LIMITS) {
  const out: string[] = [];
  for (const t of times) {
    const next = takeSendMode(state, bounds, t, false);
    out.push(next.mode.unleased ? 'unleased' : next.mode.why);
    state = next.state;
  }
  return { modes: out, state };
}

describe('sending without a rate lease', () => {
  it('allows a fifth of the rate a destination starts at, and none to a destination whose ceiling is near it', () => {
    expect(unleasedAllowance(RATE_LIMITS)).toBe(2);
    expect(unleasedAllowance({ minPerSecond: 10, maxPerSecond: 10 })).toBe(2);
    // Starts at its minimum when that is above 10/s.
    expect(unleasedAllowance({ minPerSecond: 30, maxPerSecond: 30 })).toBe(6);
    expect(unleasedAllowance({ minPerSecond: 1, maxPerSecond: 4 })).toBe(0);
    expect(modes([T], NO_UNLEASED_SENDS, { minPerSecond: 1, maxPerSecond: 4 }).modes).toEqual(['allowance']);
  });

  it('a sparse destination is never leased: one delivery a second, or a pair now and then', () => {
    expect(modes(Array.from({ length: 120 }, (_, i) => T + i * 1000)).modes.every((m) => m === 'unleased')).toBe(true);
    expect(modes([T, T + 10, T + 5000, T + 5001]).modes).toEqual(['unleased', 'unleased', 'unleased', 'unleased']);
  });

  it('past the allowance in a sliding second the destination is leased, and stays leased while deliveries keep coming', () => {
    const burst = modes([T, T + 100, T + 200, T + 1500]);
    expect(burst.modes).toEqual(['unleased', 'unleased', 'allowance', 'leased']);
    // One delivery every 50 s keeps it leased (a busy destination does not flap)...
    const kept = modes([T + 50_000, T + 100_000], burst.state);
    expect(kept.modes).toEqual(['leased', 'leased']);
    // ...a quiet minute ends it.
    expect(modes([T + 100_000 + LEASED_QUIET_MS], kept.state).modes).toEqual(['unleased']);
  });

  it('after a sign of overload the destination is leased for the cool-down, however quiet', () => {
    const after429 = throttled(modes([T]).state, T + 50);
    expect(modes([T + 1000, T + 50 + THROTTLE_COOL_DOWN_MS - 1], after429).modes).toEqual(['throttled', 'throttled']);
    const quietThen = throttled(NO_UNLEASED_SENDS, T);
    expect(modes([T + THROTTLE_COOL_DOWN_MS], quietThen).modes).toEqual(['unleased']);
  });

  it('a delivery back from a rate deferral is always leased', () => {
    expect(takeSendMode(NO_UNLEASED_SENDS, RATE_LIMITS, T, true).mode).toEqual({ unleased: false, why: 'returning' });
  });

  it('a send withdrawn (its caller found nothing to send) frees its place in the allowance', () => {
    const two = modes([T, T + 1]).state;
    expect(modes([T + 2], withdrawSend(two, T + 1)).modes).toEqual(['unleased']);
    expect(withdrawSend(two, T + 999)).toEqual(two);
  });

  it('a lease shows overload when the rate was cut below where it starts, or the destination is paused', () => {
    expect(leaseShowsThrottle({ rate: 10 }, RATE_LIMITS, T)).toBe(false);
    expect(leaseShowsThrottle({ rate: 40 }, RATE_LIMITS, T)).toBe(false);
    expect(leaseShowsThrottle({ rate: 9.5 }, RATE_LIMITS, T)).toBe(true);
    expect(leaseShowsThrottle({ rate: 10, pausedUntil: T + 1 }, RATE_LIMITS, T)).toBe(true);
    expect(leaseShowsThrottle({ rate: 10, pausedUntil: T }, RATE_LIMITS, T)).toBe(false);
  });
});

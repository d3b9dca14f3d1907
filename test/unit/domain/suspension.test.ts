import { applySpec, Destination } from '../../../shared/domain/destinations/destination';
import { queuedBecauseSuspended, reactivate, suspend, suspendManually } from '../../../shared/domain/destinations/suspension';

const T0 = new Date('2026-11-23T10:00:00.000Z');
const T1 = new Date('2026-11-23T11:00:00.000Z');

function destination(extra: Partial<Destination> = {}): Destination {
  return { ...applySpec('orders', { url: 'https://hooks.example.com/orders', technicalEmail: 'ops@example.com' }, undefined, T0), ...extra };
}

const lastError = { at: '2026-11-23T10:59:59.000Z', status: 404, error: 'HTTP 404', bodyExcerpt: 'no such route' };
const window = {
  attempts: 120,
  successes: 100,
  failures: 20,
  successRate: 100 / 120,
  recentErrors: [{ at: '2026-11-23T10:58:00.000Z', status: 500, error: 'HTTP 500' }],
};

describe('suspend', () => {
  const suspended = suspend(destination(), { cause: 'criteria', reason: 'HTTP 404 suspends the destination at once under event-platform', at: T1, lastError, window })!;

  it('marks the destination suspended with why, when and its rolling hour', () => {
    expect(suspended.status).toBe('suspended');
    expect(suspended.updatedAt).toBe(T1.toISOString());
    expect(suspended.suspension).toMatchObject({
      cause: 'criteria',
      reason: 'HTTP 404 suspends the destination at once under event-platform',
      at: T1.toISOString(),
      lastError,
      attempts1h: 120,
      successRate1h: 100 / 120,
    });
    // The failure that suspended it first, then the hour's others.
    expect(suspended.suspension!.recentErrors.map((e) => e.error)).toEqual(['HTTP 404', 'HTTP 500']);
  });

  it('addresses the notification to the technical email, with everything an operator needs', () => {
    const n = suspended.suspension!.notification;
    expect(n).toMatchObject({
      type: 'herald.destination.suspended',
      destinationId: 'orders',
      to: 'ops@example.com',
      cause: 'criteria',
      suspendedAt: T1.toISOString(),
      attempts1h: 120,
      reactivate: { api: 'POST /admin/destinations/orders/reactivate', cli: 'herald destinations reactivate orders' },
    });
    expect(n.subject).toBe('[Herald] destination orders suspended: HTTP 404 suspends the destination at once under event-platform');
    for (const part of ['"orders"', 'https://hooks.example.com/orders', T1.toISOString(), 'HTTP 404 suspends', '83.3 %', '120 attempts', 'HTTP 404 — no such route', 'HTTP 500', 'herald destinations reactivate orders', 'QUEUED']) {
      expect(n.text).toContain(part);
    }
  });

  it('publishes no address when the destination has none', () => {
    const { technicalEmail: _none, ...noEmail } = destination();
    const s = suspend(noEmail, { cause: 'gone', reason: 'HTTP 410 Gone', at: T1, window })!;
    expect(s.suspension!.notification.to).toBeUndefined();
    expect(s.suspension!.notification.text).toContain('410 Gone');
  });

  it('does nothing to a destination already suspended, so one suspension sends one notification', () => {
    expect(suspend(suspended, { cause: 'threshold', reason: 'again', at: T1, window })).toBeUndefined();
  });
});

describe('reactivate', () => {
  const suspended = suspend(destination(), { cause: 'threshold', reason: 'success rate 90 %', at: T0, window })!;

  it('clears the suspension and records when', () => {
    const active = reactivate(suspended, T1)!;
    expect(active.status).toBe('active');
    expect(active.suspension).toBeUndefined();
    expect(active.reactivatedAt).toBe(T1.toISOString());
  });

  it('refuses a destination that is not suspended', () => {
    expect(reactivate(destination(), T1)).toBeUndefined();
  });

  it('a new spec (PUT) keeps the suspension: only reactivation lifts it', () => {
    const updated = applySpec('orders', { url: 'https://hooks.example.com/v2' }, suspended, T1);
    expect(updated.status).toBe('suspended');
    expect(updated.suspension).toEqual(suspended.suspension);
  });
});

describe('suspendManually', () => {
  const clock = { now: () => T1 };

  it('suspends an active destination as an automatic suspension does, cause manual, recording who', () => {
    const result = suspendManually(destination(), { by: 'key:k1', reason: '  receiver maintenance ', window }, clock);
    expect(result.ok).toBe(true);
    const d = (result as { ok: true; destination: Destination }).destination;
    expect(d.status).toBe('suspended');
    expect(d.updatedAt).toBe(T1.toISOString());
    expect(d.suspension).toMatchObject({ cause: 'manual', reason: 'receiver maintenance', by: 'key:k1', at: T1.toISOString(), attempts1h: 120, successRate1h: 100 / 120, recentErrors: window.recentErrors });
    expect(d.suspension!.notification).toMatchObject({ cause: 'manual', by: 'key:k1', reason: 'receiver maintenance', to: 'ops@example.com', suspendedAt: T1.toISOString() });
    expect(d.suspension!.notification.text).toContain('it was suspended by hand by key:k1');
    // The same thing an automatic suspension leaves: queued events say so, and reactivate undoes it.
    expect(queuedBecauseSuspended(d)).toBe('destination suspended: receiver maintenance');
    const back = reactivate(d, T1)!;
    expect(back).toMatchObject({ status: 'active', reactivatedAt: T1.toISOString() });
    expect(back.suspension).toBeUndefined();
  });

  it('without a reason, says who suspended it by hand', () => {
    const result = suspendManually(destination(), { by: 'admin', window }, clock);
    expect(result.ok && result.destination.suspension).toMatchObject({ cause: 'manual', reason: 'suspended by hand by admin', by: 'admin' });
  });

  it('refuses a destination already suspended, naming its suspension, and changes nothing', () => {
    const already = suspend(destination(), { cause: 'gone', reason: 'HTTP 410 Gone', at: T0, window })!;
    const result = suspendManually(already, { by: 'admin', reason: 'again', window }, clock);
    expect(result).toEqual({ ok: false, code: 'already-suspended', message: `destination "orders" is already suspended since ${T0.toISOString()} (gone): HTTP 410 Gone; reactivate it with POST /admin/destinations/orders/reactivate` });
    expect(already.suspension!.cause).toBe('gone');
  });

  it('reads the time from the clock given, and nothing else', () => {
    let calls = 0;
    suspendManually(destination(), { by: 'admin', window }, { now: () => (calls++, T0) });
    expect(calls).toBe(1);
  });
});

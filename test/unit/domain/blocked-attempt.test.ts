import { AttemptResult, describeFailure } from '../../../shared/domain/retry/delivery';
import { POLICY_PRESET_NAMES } from '../../../shared/domain/retry/policy-preset-names';
import { POLICY_PRESETS } from '../../../shared/domain/retry/policy-presets';
import { decide, NO_HISTORY, withFailureMode } from '../../../shared/domain/retry/retry-decision';
import { rateOutcome } from '../../../shared/domain/stats/success-rate';

const T0 = new Date('2026-11-23T10:00:00.000Z');
const BLOCKED: AttemptResult = {
  kind: 'blocked',
  durationMs: 2,
  address: '10.0.0.7',
  addressClass: 'private',
  error: 'url host hooks.example.com resolves to a private address: 10.0.0.7 is in 10.0.0.0/8 (RFC 1918); Herald does not deliver to private, loopback, link-local, metadata or other non-public addresses',
};

/**
 * A webhook whose host resolves to a refused address is not retried (each retry would probe
 * the same address again) nor left to die event by event: the destination is suspended, its
 * events wait QUEUED, and its technical contact is told, until DNS or the URL is fixed.
 */
describe('an attempt the SSRF guard refused', () => {
  test.each(POLICY_PRESET_NAMES)('%s: suspends the destination (cause blocked-address), whatever the history', (name) => {
    for (const history of [NO_HISTORY, { attempts: 3, throttled: 1, firstAttemptAt: T0 }]) {
      const decision = decide(POLICY_PRESETS[name], history, BLOCKED, T0, T0);
      expect(decision).toEqual({ kind: 'suspend', cause: 'blocked-address', reason: `blocked address (private): ${BLOCKED.kind === 'blocked' ? BLOCKED.error : ''}` });
      // failureMode queue leaves a suspension as it is.
      expect(withFailureMode(decision, 'queue')).toEqual(decision);
    }
  });

  test('its last error names the refusal; it counts as a failure', () => {
    expect(describeFailure(BLOCKED, T0)).toEqual({ at: T0.toISOString(), error: expect.stringMatching(/^refused by the SSRF guard: url host hooks\.example\.com resolves to a private address/) as string });
    expect(rateOutcome(BLOCKED, 0, 3_600_000)).toBe('failure');
  });
});

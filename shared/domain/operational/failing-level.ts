import type { ThresholdPolicy } from '../retry/delivery-policy';
import type { RateCounts } from '../stats/success-rate';
import type { FailingState } from '../retry/suspension-record';

export type { FailingState };

/**
 * The early warning before a threshold suspension: a destination is *failing* once its failure
 * rate over the policy's window reaches a fraction of the rate that suspends it (with a 95 %
 * success-rate threshold and the fraction 0.9, a failure rate of 4.5 %). Judged on the same
 * sample as the suspension rule (domain/stats/success-rate.ts thresholdVerdict), so a window too
 * small to suspend is too small to warn about.
 */

export interface FailingMeasure {
  /** The highest fraction reached; undefined below all (or below the minimum sample). */
  fraction?: number;
  failureRate: number;
  suspendAboveFailureRate: number;
}

/** The highest of `fractions` the window's failure rate reached, as a share of the threshold's. */
export function failingMeasure(counts: RateCounts, threshold: ThresholdPolicy, fractions: readonly number[]): FailingMeasure {
  const sample = counts.successes + counts.failures;
  const suspendAboveFailureRate = 1 - threshold.successRate;
  const failureRate = sample === 0 ? 0 : counts.failures / sample;
  if (sample < threshold.minSample || suspendAboveFailureRate <= 0) return { failureRate, suspendAboveFailureRate };
  // A little tolerance: 9 of 20 against a 50 % threshold is exactly 0.9 of it, whatever floating point makes of 0.45 / 0.5.
  const reached = fractions.filter((f) => failureRate >= f * suspendAboveFailureRate - 1e-9);
  return reached.length ? { fraction: Math.max(...reached), failureRate, suspendAboveFailureRate } : { failureRate, suspendAboveFailureRate };
}

export type FailingChange = { kind: 'none' } | { kind: 'crossed'; state: FailingState } | { kind: 'recovered' };

/**
 * What the measure does to the state kept: a fraction above the one announced is a crossing
 * (announced once); falling below every fraction clears the state, so a later crossing is
 * announced again; anything else changes nothing (and writes nothing).
 */
export function failingChange(kept: FailingState | undefined, measure: FailingMeasure, now: Date): FailingChange {
  if (measure.fraction === undefined) return kept ? { kind: 'recovered' } : { kind: 'none' };
  if (kept && kept.fraction >= measure.fraction) return { kind: 'none' };
  return { kind: 'crossed', state: { fraction: measure.fraction, at: now.toISOString(), failureRate: measure.failureRate } };
}

/**
 * "Busy all hour", written through the deliver path's own counter writer (DestinationCounters,
 * over the runtime's Firestore and operation counter) whose clock stands in each of the last
 * `minutes` minutes in turn, oldest first: `perMinute` attempts of each destination, flushed
 * within their minute, as a deliver instance would have (counts flushed after their minute
 * count as late and go to the minute they arrive in). With more attempts a minute than a
 * sparse destination takes, each minute is a document of the destination's own: 60 an hour,
 * the shape the read counts come from.
 */
import { FirestoreCounterStore } from '../../shared/adapters/firestore/counters';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { Runtime } from '../../shared/runtime/runtime';

export interface BusyHour {
  destinations: number;
  minutes: number;
  perMinute: number;
  seconds: number;
}

export async function writeBusyHour(rt: Runtime, ids: readonly string[], options: { minutes?: number; perMinute?: number; failing?: ReadonlySet<string>; note?: (line: string) => void } = {}): Promise<BusyHour> {
  const minutes = options.minutes ?? 60;
  const perMinute = options.perMinute ?? 20;
  const t0 = Date.now();
  const bucketMs = rt.counters.options.bucketMs;
  // Each minute's attempts at its start, flushed a second later: within the minute, never late.
  let clockAt = 0;
  const writer = new DestinationCounters(new FirestoreCounterStore(rt.firestore, rt.firestoreOps), { now: () => new Date(clockAt) }, rt.log, rt.counters.options);
  const thisMinute = Math.floor(Date.now() / bucketMs) * bucketMs;
  for (let k = minutes - 1; k >= 0; k--) {
    const minute = thisMinute - k * bucketMs;
    const at = new Date(minute + 1_000);
    clockAt = at.getTime();
    for (const id of ids) {
      const fails = options.failing?.has(id) === true;
      for (let n = 0; n < perMinute; n++) writer.record(id, fails ? 'failure' : 'success', at, fails && n === 0 ? { at: at.toISOString(), status: 503, error: 'HTTP 503' } : undefined, 40 + (n % 7) * 10);
    }
    clockAt = minute + 2_000;
    await writer.flush();
    if (k % 10 === 0) options.note?.(`busy hour: the minute ${k} minutes ago written for ${ids.length} destinations`);
  }
  return { destinations: ids.length, minutes, perMinute, seconds: Math.round((Date.now() - t0) / 100) / 10 };
}

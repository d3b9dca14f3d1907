/**
 * The directory on a fresh instance: a new runtime routes its first event (what it reads to
 * know where the event goes, with the whole registry in Firestore), then `changes` destinations
 * are registered through another instance (the stack's admin API) and the fresh one routes
 * again once its view is due for a look: what it reads to catch up must follow the changes,
 * not the registry's size.
 */
import { Runtime } from '../../shared/runtime/runtime';
import { AdminClient, Measured, Probe } from './scale-probe';

/** Reads the catch-up may cost: per change registered elsewhere, and a few for the look itself. */
export const CATCH_UP_READS = { perChange: 3, fixed: 10 } as const;

export interface CatchUpPhase {
  firstRoute: Measured;
  /** How many destinations the first event matched. */
  firstMatched: number;
  changes: number;
  catchUp: Measured;
  /** The new destinations the fresh instance sees after catching up (each takes the routed type). */
  seenAfter: number;
}

export async function catchUpPhase(fresh: Runtime, admin: AdminClient, probe: Probe, route: { type: string; account: string }, changes: { account: string; count: number; spec: (k: number) => object }, waitMs: number): Promise<CatchUpPhase> {
  const first = await probe.measure('fresh instance: routing its first event', () => fresh.directory.matching(route.type, route.account), fresh.firestoreOps);
  await admin.call('POST', '/accounts', { id: changes.account, name: 'Catch-up' }, [201]);
  for (let k = 0; k < changes.count; k++) await admin.call('PUT', `/accounts/${changes.account}/destinations/c-${k}`, changes.spec(k), [201]);
  // Each look reaches a few seconds back (late commits): two looks, as an instance routing steadily makes.
  const catchUp = await probe.measure(
    `fresh instance: catching up on ${changes.count} registrations elsewhere`,
    async () => {
      let seen = 0;
      for (let look = 0; look < 2; look++) {
        await new Promise((r) => setTimeout(r, waitMs));
        seen = (await fresh.directory.matching(route.type, changes.account)).length;
      }
      return seen;
    },
    fresh.firestoreOps,
  );
  // The waits are no part of the cost.
  catchUp.m.ms = Math.round((catchUp.m.ms - 2 * waitMs) * 10) / 10;
  return { firstRoute: first.m, firstMatched: first.value.length, changes: changes.count, catchUp: catchUp.m, seenAfter: catchUp.value };
}

export const catchUpMet = (p: CatchUpPhase): boolean => p.catchUp.counted <= CATCH_UP_READS.perChange * p.changes + CATCH_UP_READS.fixed && p.seenAfter === p.changes;

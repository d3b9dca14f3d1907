/**
 * The registry the scale phases stand on: A accounts made through the admin API, then D
 * destinations, D / A in each, every create under the account's destination quota (the
 * default in force: nothing set on the accounts). Timed in ten slices, so a create that costs
 * more as the registry grows shows as a last slice slower than the first.
 */
import { performance } from 'node:perf_hooks';
import { AdminClient, Probe } from './scale-probe';
import { round } from './stats';

/** Zero-padded, so that sort order is number order and the last account sorts last (after `scale-live-…`). */
export const accountId = (a: number): string => `tenant-${String(a).padStart(5, '0')}`;
/** Three digits: an account holds at most its default quota of 1,000. */
export const destinationId = (j: number): string => `d-${String(j).padStart(3, '0')}`;
/** Herald's internal name of a destination of an account (domain/ids.ts). */
export const internalId = (a: number, j: number): string => `${accountId(a)}_${destinationId(j)}`;
/** A's and D's destination `i` (account-major): its types, shaped as a platform's (a few of a shared catalogue). */
export const catalogueType = (i: number): string => `com.example.scale.catalogue.${i % 500}`;

/** `count` distinct indices of 0 … total-1, evenly apart, the last one always among them (the end of the sort order). */
export function spread(total: number, count: number): number[] {
  const n = Math.min(count, total);
  const step = total / n;
  return Array.from({ length: n }, (_, k) => total - 1 - Math.floor(k * step)).reverse();
}

export interface Slice {
  /** Destinations registered by the end of the slice. */
  upTo: number;
  destinations: number;
  seconds: number;
  perSecond: number;
  /** Firestore documents read per create in the slice (wire; account creates included). */
  readsPerCreate: number;
}

export interface Registration {
  accounts: number;
  destinations: number;
  seconds: number;
  perSecond: number;
  slices: Slice[];
  /** Registration stopped at the time budget before all were registered. */
  cutShort: boolean;
}

export interface RegistryLayout {
  accounts: number;
  perAccount: number;
  /** Where each destination's URL points (the loopback receiver). */
  receiverUrl: string;
}

export const destinationUrl = (layout: Pick<RegistryLayout, 'receiverUrl'>, a: number, j: number): string => `${layout.receiverUrl}/t/${a}/${j}`;

export function destinationSpec(layout: RegistryLayout, a: number, j: number): object {
  const i = a * layout.perAccount + j;
  return { url: destinationUrl(layout, a, j), eventTypes: [catalogueType(i), `com.example.scale.customer-${i}.*`] };
}

/**
 * Registers every account and its destinations, `concurrency` accounts at a time (each
 * account's own creates one after another, as a customer's setup would). Stops taking new
 * accounts once `budgetMs` has passed.
 */
export async function registerAll(admin: AdminClient, probe: Probe, layout: RegistryLayout, concurrency: number, budgetMs: number, note: (line: string) => void): Promise<Registration> {
  const total = layout.accounts * layout.perAccount;
  const sliceSize = Math.max(1, Math.ceil(total / 10));
  const slices: Slice[] = [];
  let done = 0;
  let nextAccount = 0;
  let cutShort = false;
  const start = performance.now();
  let sliceStart = start;
  let sliceReads = probe.snapshot();
  const readsOf = (by: ReturnType<Probe['snapshot']>) => Object.values(by).reduce((s, o) => s + o.reads, 0);
  const closeSlice = () => {
    const now = performance.now();
    const previous = slices.at(-1)?.upTo ?? 0;
    const n = done - previous;
    if (n <= 0) return;
    const reads = readsOf(probe.meter.byCollection) - readsOf(sliceReads);
    const seconds = (now - sliceStart) / 1000;
    slices.push({ upTo: done, destinations: n, seconds: round(seconds, 1)!, perSecond: round(n / seconds, 1)!, readsPerCreate: round(reads / n, 1)! });
    note(`registered ${done}/${total}: the last ${n} at ${slices.at(-1)!.perSecond}/s, ${slices.at(-1)!.readsPerCreate} reads each`);
    sliceStart = now;
    sliceReads = probe.snapshot();
  };
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (nextAccount < layout.accounts) {
        if (performance.now() - start > budgetMs) {
          cutShort = true;
          return;
        }
        const a = nextAccount++;
        await admin.call('POST', '/accounts', { id: accountId(a), name: `Tenant ${a}` }, [201]);
        for (let j = 0; j < layout.perAccount; j++) {
          await admin.call('PUT', `/accounts/${accountId(a)}/destinations/${destinationId(j)}`, destinationSpec(layout, a, j), [201]);
          done++;
          if (done % sliceSize === 0) closeSlice();
        }
      }
    }),
  );
  closeSlice();
  const seconds = (performance.now() - start) / 1000;
  return { accounts: Math.min(nextAccount, layout.accounts), destinations: done, seconds: round(seconds, 1)!, perSecond: round(done / seconds, 1)!, slices, cutShort };
}

import { purgeSettled, PURGE_SETTLE_MS } from '../../domain/access/account';
import { AccountDataEraser, AccountStore } from '../../ports/accounts';
import { Clock, Logger } from '../../ports/clock';

/**
 * Deleting an account deletes everything stored under it (AccountDataEraser says what). As
 * much as fits in a few seconds is deleted at once, while DELETE /admin/accounts/{id} waits;
 * whatever a large account has left then, and anything that arrives late (purgeSettled), the
 * scheduled purge deletes: each pump run on GCP, each reconciler interval in local mode.
 * The account's tombstone says `pending` until a late enough pass finds nothing.
 */

export interface AccountPurgeDeps {
  accounts: Pick<AccountStore, 'pendingPurges' | 'purged'>;
  accountData: AccountDataEraser;
  clock: Clock;
  log: Logger;
  /** How long after a deletion late data may still arrive (default PURGE_SETTLE_MS). */
  settleMs?: number;
}

/** Documents one step deletes: one query, and one batch of deletes. */
export const PURGE_STEP = 500;

/** How long DELETE /admin/accounts/{id} deletes the account's data before it answers, leaving the rest to the scheduled purge. */
export const PURGE_INLINE_MS = 3_000;

/** Tombstones one scheduled run looks at. */
const PURGES_PER_RUN = 20;

export interface Erased {
  /** A pass through every store found nothing left. */
  clean: boolean;
  deleted: number;
}

/**
 * Deletes the account's data, step after step, until a whole pass from the start finds
 * nothing (what came in during the pass before is caught by the next), or `untilMs` (epoch
 * ms) has come: at least one step is always taken.
 */
export async function eraseAccountData(deps: Pick<AccountPurgeDeps, 'accountData' | 'clock'>, account: string, untilMs: number): Promise<Erased> {
  let cursor: string | undefined;
  let deleted = 0;
  let inPass = 0;
  do {
    const step = await deps.accountData.eraseSome(account, PURGE_STEP, cursor);
    deleted += step.deleted;
    inPass += step.deleted;
    cursor = step.cursor;
    if (cursor === undefined) {
      if (inPass === 0) return { clean: true, deleted };
      inPass = 0;
    }
  } while (deps.clock.now().getTime() < untilMs);
  return { clean: false, deleted };
}

export interface PurgeRun {
  /** Accounts whose purge is done now. */
  purged: string[];
  /** Accounts still pending: data left, time up, or too soon after the deletion to be sure. */
  pending: string[];
  deleted: number;
}

/** The scheduled purge: goes on with every pending account's, oldest first, until `untilMs`; one that fails is tried again next run. */
export async function finishAccountPurges(deps: AccountPurgeDeps, untilMs: number): Promise<PurgeRun> {
  const run: PurgeRun = { purged: [], pending: [], deleted: 0 };
  for (const tombstone of await deps.accounts.pendingPurges(PURGES_PER_RUN)) {
    if (deps.clock.now().getTime() >= untilMs) {
      run.pending.push(tombstone.id);
      continue;
    }
    try {
      const erased = await eraseAccountData(deps, tombstone.id, untilMs);
      run.deleted += erased.deleted;
      const now = deps.clock.now();
      if (erased.clean && purgeSettled(tombstone, now, deps.settleMs ?? PURGE_SETTLE_MS)) {
        await deps.accounts.purged(tombstone.id, now);
        run.purged.push(tombstone.id);
      } else {
        run.pending.push(tombstone.id);
      }
      if (erased.deleted > 0 || run.purged.includes(tombstone.id)) {
        deps.log.info('deleted account purged', { account: tombstone.id, deleted: erased.deleted, done: run.purged.includes(tombstone.id) });
      }
    } catch (e) {
      run.pending.push(tombstone.id);
      deps.log.warn("a deleted account's data could not all be deleted; the next run goes on", { account: tombstone.id, error: (e as Error).message });
    }
  }
  return run;
}

import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { deadlineExceeded } from './lost-replies';

/** Which write loses its reply: a create (a lone addDelivered is one) or an update's transaction, the `nth` of its kind to delivery `id` (from 1). */
export type LosingWrite = (op: 'create' | 'update', id: string, nth: number) => boolean;

/**
 * A memory DeliveryStore whose writes land and then lose their reply, as Firestore's do under
 * test/support/lost-replies.ts (issue 51), for fast unit tests of what Herald makes of them:
 * - a create is written, then throws DEADLINE_EXCEEDED (a lone addDelivered goes through it);
 * - an update's transaction commits, then the client runs it again (as the Firestore client
 *   does after DEADLINE_EXCEEDED on a commit): `decide` sees its own write, and the update
 *   answers what that second run wrote.
 * `lose` says which writes; the store is changed in place. Returns how many replies were lost.
 */
export function loseRecordReplies(store: MemoryDeliveryStore, lose: LosingWrite): { readonly lost: number } {
  const counted = { lost: 0 };
  const writes = new Map<string, number>();
  const nth = (op: 'create' | 'update', id: string) => {
    const n = (writes.get(`${op}:${id}`) ?? 0) + 1;
    writes.set(`${op}:${id}`, n);
    return n;
  };
  const create = store.create.bind(store);
  const update = store.update.bind(store);
  store.create = async (record, options) => {
    const created = await create(record, options);
    if (!created || !lose('create', record.id, nth('create', record.id))) return created;
    counted.lost++;
    throw deadlineExceeded();
  };
  store.update = async (id, decide) => {
    const written = await update(id, decide);
    if (written === undefined || !lose('update', id, nth('update', id))) return written;
    counted.lost++;
    return update(id, decide);
  };
  return counted;
}

/** Loses the reply to the `nth` write of kind `op` to each delivery (from 1; counting only writes that wrote). */
export function nthWrite(op: 'create' | 'update', nth = 1): LosingWrite {
  return (o, _id, n) => o === op && n === nth;
}

import { seg } from './api';
import { Session } from './session';

/** What every page works with: who is signed in and the account being looked at. */
export interface Ctx {
  session: Session;
  account: string;
}

/** The account's part of the admin API: `/accounts/{id}`. */
export const acct = (ctx: Ctx) => `/accounts/${seg(ctx.account)}`;

/** May this session change things? (A read-only portal may not.) */
export const canWrite = (ctx: Ctx) => !ctx.session.readOnly;

/** A portal narrowed to some destinations shows only those. */
export const visibleDestination = (ctx: Ctx, id: string) => !ctx.session.destinations || ctx.session.destinations.includes(id);

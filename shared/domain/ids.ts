/**
 * The identifiers every other domain module names things by, with no dependency of their own:
 * the bottom of shared/domain, so that a destination, a delivery and a suspension can all
 * refer to ids without importing one another.
 */

/** A destination id: 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit. */
export const DESTINATION_ID = /^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$|^[a-z0-9]$/;

/** An account id: the same shape as a destination's. */
export const ACCOUNT_ID = DESTINATION_ID;

/** The account of everything from before accounts existed, and of callers that name none. */
export const DEFAULT_ACCOUNT = 'default';

/**
 * How Herald names a destination inside (records, lanes, counters): its id in the `default`
 * account, `<account>_<id>` in any other. `_` is in neither id's alphabet, so the two never
 * collide, and data from before accounts keeps its names.
 */
export const INTERNAL_DESTINATION_ID = /^(?:[a-z0-9][a-z0-9-]{0,61}[a-z0-9]_|[a-z0-9]_)?(?:[a-z0-9][a-z0-9-]{0,61}[a-z0-9]|[a-z0-9])$/;

export function internalDestinationId(account: string, id: string): string {
  return account === DEFAULT_ACCOUNT ? id : `${account}_${id}`;
}

/** The account and the account's own id of a destination named inside Herald. */
export function splitDestinationId(internal: string): { account: string; id: string } {
  const cut = internal.indexOf('_');
  return cut < 0 ? { account: DEFAULT_ACCOUNT, id: internal } : { account: internal.slice(0, cut), id: internal.slice(cut + 1) };
}

export function deliveryId(destinationId: string, eventKey: string): string {
  return `${destinationId}.${eventKey}`;
}

/** `${destinationId}.${eventKey}`; checked so a stray `/` or `..` never reaches the store. */
const EVENT_KEY = /^[A-Za-z0-9_-]{1,128}$/;

export function isDeliveryId(id: string): boolean {
  const dot = id.indexOf('.');
  return dot > 0 && INTERNAL_DESTINATION_ID.test(id.slice(0, dot)) && EVENT_KEY.test(id.slice(dot + 1));
}

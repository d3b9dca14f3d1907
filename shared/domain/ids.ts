/**
 * The identifiers every other domain module names things by, with no dependency of their own:
 * the bottom of shared/domain, so that a destination, a delivery and a suspension can all
 * refer to ids without importing one another.
 */

/** A destination id: 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit. */
export const DESTINATION_ID = /^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$|^[a-z0-9]$/;

export function deliveryId(destinationId: string, eventKey: string): string {
  return `${destinationId}.${eventKey}`;
}

/** `${destinationId}.${eventKey}`; checked so a stray `/` or `..` never reaches the store. */
const EVENT_KEY = /^[A-Za-z0-9_-]{1,128}$/;

export function isDeliveryId(id: string): boolean {
  const dot = id.indexOf('.');
  return dot > 0 && DESTINATION_ID.test(id.slice(0, dot)) && EVENT_KEY.test(id.slice(dot + 1));
}

import { z } from 'zod';
import { DESTINATION_ID } from '../../../shared/domain/destinations/destination';
import { accountFlag } from '../answers';

/** What the destination commands and their neighbours (deliveries, replay, ordered keys) share. */

export const destinationIdSchema = z
  .string()
  .regex(DESTINATION_ID, 'a destination id is 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit');

/** A missing destination: which, and how to list the ones there are (in the same account). */
export function noDestination(id: string, account: string | undefined): { what: string; hint: string } {
  return {
    what: `no destination ${JSON.stringify(id)}${account === undefined ? '' : ` in account ${JSON.stringify(account)}`}`,
    hint: `see the destinations there are with: herald destinations list${accountFlag(account)}`,
  };
}

export const ID_ARG = { id: '<id>' };

/** Plain columns, widest cell wide; the last column is not padded. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

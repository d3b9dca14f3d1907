/**
 * The most bytes of rows one list answer of the admin API carries. A page stops adding rows
 * once the next would pass it and hands back a cursor for the rest, so paging still brings
 * every row once; a page always has at least one row (a 256 KiB event fits whole). Without it
 * 500 queued deliveries of 256 KiB events made one answer of ~170 MB for any read key.
 */
export const LIST_ANSWER_MAX_BYTES = 4 * 1024 * 1024;

/** What one row adds to an answer: its JSON and the comma before the next. */
export function rowBytes(row: unknown): number {
  return Buffer.byteLength(JSON.stringify(row)) + 1;
}

/** How many of `rows`, from the first, fit within `budget` bytes of JSON: at least one when there is one. */
export function rowsWithin(rows: readonly unknown[], budget = LIST_ANSWER_MAX_BYTES): number {
  let used = 0;
  for (let i = 0; i < rows.length; i++) {
    used += rowBytes(rows[i]);
    if (used > budget && i > 0) return i;
  }
  return rows.length;
}

import { BATCH_LIMITS, BatchSpec, batchSpecSchema } from '../../shared/domain/modes/batching';
import { Issue } from './errors';

/**
 * `destinations add --batch-max-events N --batch-max-wait-ms MS [--batch-max-bytes B]`: the
 * destination's `batch` (shared/domain/modes/batching.ts), checked by the domain's own schema so the
 * CLI refuses exactly what the API would, each problem named by its flag.
 */

export interface BatchFlags {
  batchMaxEvents?: string;
  batchMaxWaitMs?: string;
  batchMaxBytes?: string;
}

const FLAG = { maxEvents: '--batch-max-events', maxWaitMs: '--batch-max-wait-ms', maxBytes: '--batch-max-bytes' } as const;
type Field = keyof typeof FLAG;

export const BATCH_FLAG_HELP = {
  maxEvents: `send events many to a request: at most this many in one (${BATCH_LIMITS.minEvents}-${BATCH_LIMITS.maxEvents}; with ${FLAG.maxWaitMs})`,
  maxWaitMs: `a batch goes at the latest this many ms after its oldest event was accepted (${BATCH_LIMITS.minWaitMs}-${BATCH_LIMITS.maxWaitMs}; with ${FLAG.maxEvents})`,
  maxBytes: `a batch's body is at most this many bytes (${BATCH_LIMITS.minBytes}-${BATCH_LIMITS.maxBytes}, default ${BATCH_LIMITS.maxBytes})`,
};

/**
 * A number as typed: plain decimal digits (a sign and a fraction let the schema say "whole
 * number" or name the bounds). Anything else stays text, which the schema refuses as not a
 * number: `Number()` would take "", " 5", "1e3" and "0x10", none of which a person means here.
 */
function strictNumber(text: string): unknown {
  return /^[+-]?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

/** The flags' `batch`, undefined when none is given (one event per request); or every problem, by flag. */
export function batchFromFlags(flags: BatchFlags): { ok: true; batch?: BatchSpec } | { ok: false; issues: Issue[] } {
  const given: Partial<Record<Field, string>> = {
    ...(flags.batchMaxEvents !== undefined ? { maxEvents: flags.batchMaxEvents } : {}),
    ...(flags.batchMaxWaitMs !== undefined ? { maxWaitMs: flags.batchMaxWaitMs } : {}),
    ...(flags.batchMaxBytes !== undefined ? { maxBytes: flags.batchMaxBytes } : {}),
  };
  const named = Object.keys(given) as Field[];
  if (named.length === 0) return { ok: true };
  // The schema would say "must be a number" of a missing flag; say which flag it goes with.
  const missing = (['maxEvents', 'maxWaitMs'] as const).filter((f) => given[f] === undefined);
  if (missing.length > 0) {
    const withFlags = named.map((f) => FLAG[f]).join(' and ');
    return {
      ok: false,
      issues: missing.map((f) => ({ path: FLAG[f], message: `is needed with ${withFlags}: a batch needs ${FLAG.maxEvents} and ${FLAG.maxWaitMs} both (leave every --batch-* flag out to send one event per request)` })),
    };
  }
  const parsed = batchSpecSchema.safeParse(Object.fromEntries(named.map((f) => [f, strictNumber(given[f]!)])));
  if (parsed.success) return { ok: true, batch: parsed.data };
  return {
    ok: false,
    issues: parsed.error.issues.map((i) => {
      const field = i.path[0] as Field | undefined;
      // The domain's messages name the API field ("batch.maxEvents must be …"); the flag says it already.
      return field === undefined ? { path: 'arguments', message: i.message } : { path: FLAG[field], message: i.message.replace(`batch.${field} `, '') };
    }),
  };
}

/** "100 events / 2000 ms", with the byte limit when it is not the default; "-" when not batched: a table cell. */
export function batchCell(batch: BatchSpec | undefined): string {
  if (!batch) return '-';
  return `${batch.maxEvents} events / ${batch.maxWaitMs} ms${batch.maxBytes === undefined ? '' : ` / ${batch.maxBytes} B`}`;
}

/** What `destinations show` says of the setting: how a batch fills and when it goes. */
export function batchSentence(batch: BatchSpec | undefined): string {
  if (!batch) return 'one event per request (not batched)';
  const bytes = batch.maxBytes === undefined ? `${BATCH_LIMITS.maxBytes} bytes (the default)` : `${batch.maxBytes} bytes`;
  return `batches of up to ${batch.maxEvents} events and ${bytes}, each sent at the latest ${batch.maxWaitMs} ms after its oldest event was accepted`;
}

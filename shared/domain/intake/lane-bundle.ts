import { z } from 'zod';
import type { PubSubMessage } from '../events/cloudevents-pubsub';
import type { ValidationIssue } from '../events/event';

/**
 * A bundle: several lane messages for one destination carried as one Pub/Sub message (ingest
 * makes one of the events a request sends to a destination). On the batch lane Pub/Sub bills
 * every byte twice (published, then pulled), and a batch's events are alike: compressed
 * together they take a fraction of their bytes (a realistic JSON payload: ~3.5× for a hundred).
 * On a first-attempt lane one push then carries many events: one invocation, and outcomes that
 * end together, committed in one group write (app/delivery/deliver.ts deliverPush), where a push each
 * would cost an invocation and, on the emulator's two pushes in flight, a write each.
 *
 * The body, before compression: one line of JSON naming each member's attributes and data
 * length, then the members' data one after another, as they are (events' data is bytes).
 */

/** Most members in one bundle, and most bytes of their data and attributes before compression. */
export const BUNDLE_LIMITS = { members: 1000, bytes: 4 * 1024 * 1024 };

export type BundleLimits = typeof BUNDLE_LIMITS;

/**
 * A bundle pushed to `deliver` (a first-attempt lane) is smaller: its members are attempted at
 * once, each an HTTP request in flight for up to its timeout, and an instance takes many pushes
 * at a time (its memory holds each one's events).
 */
export const PUSHED_BUNDLE_LIMITS: BundleLimits = { members: 100, bytes: 1024 * 1024 };

const headerSchema = z.strictObject({
  m: z
    .array(z.strictObject({ a: z.record(z.string(), z.string()), n: z.number().int().nonnegative() }), { error: 'm must list the members' })
    .min(1, { error: 'a bundle holds one member at least' })
    .max(BUNDLE_LIMITS.members, { error: `a bundle holds at most ${BUNDLE_LIMITS.members} members` }),
});

/** What a member weighs toward BUNDLE_LIMITS.bytes. */
function bundleShare(message: PubSubMessage): number {
  let bytes = message.data.byteLength;
  for (const [k, v] of Object.entries(message.attributes)) bytes += k.length + v.length + 8;
  return bytes;
}

/** `messages` in bundles within `limits`, in order. */
export function bundlesOf(messages: readonly PubSubMessage[], limits: BundleLimits = BUNDLE_LIMITS): PubSubMessage[][] {
  const out: PubSubMessage[][] = [];
  let current: PubSubMessage[] = [];
  let bytes = 0;
  for (const m of messages) {
    const share = bundleShare(m);
    if (current.length > 0 && (current.length >= limits.members || bytes + share > limits.bytes)) {
      out.push(current);
      [current, bytes] = [[], 0];
    }
    current.push(m);
    bytes += share;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** The body of a bundle of `messages` (uncompressed). */
export function bundleBody(messages: readonly PubSubMessage[]): Buffer {
  const header = JSON.stringify({ m: messages.map((m) => ({ a: m.attributes, n: m.data.byteLength })) });
  return Buffer.concat([Buffer.from(`${header}\n`), ...messages.map((m) => m.data)]);
}

export type BundleRead = { ok: true; members: PubSubMessage[] } | { ok: false; issues: ValidationIssue[] };

/** A bundle's body (uncompressed) read back into its members; `count` is what its attribute says it holds. */
export function readBundleBody(body: Buffer, count: number): BundleRead {
  const cut = body.indexOf(0x0a);
  if (cut < 0) return { ok: false, issues: [{ path: 'data', message: 'a bundle starts with a line of JSON naming its members' }] };
  let json: unknown;
  try {
    json = JSON.parse(body.subarray(0, cut).toString('utf8'));
  } catch {
    return { ok: false, issues: [{ path: 'data', message: "a bundle's first line is not JSON" }] };
  }
  const header = headerSchema.safeParse(json);
  if (!header.success) return { ok: false, issues: header.error.issues.map((i) => ({ path: ['data', ...i.path.map(String)].join('.'), message: i.message })) };
  const members = header.data.m;
  if (members.length !== count) return { ok: false, issues: [{ path: 'attributes', message: `the bundle says it holds ${count} members; its body lists ${members.length}` }] };
  const total = members.reduce((n, m) => n + m.n, 0);
  if (cut + 1 + total !== body.length) return { ok: false, issues: [{ path: 'data', message: `the members' data should be ${total} bytes; the body has ${body.length - cut - 1}` }] };
  let at = cut + 1;
  return {
    ok: true,
    members: members.map((m) => {
      const data = body.subarray(at, at + m.n);
      at += m.n;
      return { data: Buffer.from(data), attributes: m.a };
    }),
  };
}

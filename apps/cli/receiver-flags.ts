import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { receiverSpecShape } from '../../shared/domain/destinations/receiver-spec';
import { Issue } from './errors';

/**
 * `destinations add --receiver FILE [--signature PROFILE]`: how the receiver is reached
 * (headers, auth, tls, signature; docs/what-a-destination-receives.md). Credentials come from a
 * file, never from flags, which shells keep in their history and `ps` shows to every user. In
 * the file a PEM may be given inline or as "@path" (read relative to the working directory).
 */

export interface ReceiverFlags {
  receiver?: string;
  signature?: string;
}

export const RECEIVER_FLAG_HELP = {
  receiver: 'a JSON file {"headers"?, "auth"?, "tls"?, "signature"?}: static headers, receiver auth, a client certificate (PEM inline or "@file"), signature profile; null removes one',
  signature: 'signature profile: standard-webhooks (default) or github; a migration between them goes in --receiver',
};

const receiverFileSchema = z.strictObject(receiverSpecShape, { error: 'the --receiver file must hold a JSON object {"headers"?, "auth"?, "tls"?, "signature"?}' });

export type ReceiverPart = z.output<typeof receiverFileSchema>;

/** The receiver settings the flags give (nothing: the destination keeps its own), or every problem by flag. */
export function receiverFromFlags(flags: ReceiverFlags): { ok: true; receiver: ReceiverPart } | { ok: false; issues: Issue[] } {
  let raw: Record<string, unknown> = {};
  if (flags.receiver !== undefined) {
    try {
      raw = JSON.parse(readFileSync(flags.receiver, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      return { ok: false, issues: [{ path: '--receiver', message: `cannot read ${flags.receiver} as JSON: ${(e as Error).message.split('\n')[0]}` }] };
    }
    const tls = raw?.tls;
    if (tls && typeof tls === 'object') {
      try {
        raw = { ...raw, tls: Object.fromEntries(Object.entries(tls).map(([k, v]) => [k, typeof v === 'string' && v.startsWith('@') ? readFileSync(v.slice(1), 'utf8') : v])) };
      } catch (e) {
        return { ok: false, issues: [{ path: '--receiver.tls', message: (e as Error).message.split('\n')[0]! }] };
      }
    }
  }
  if (flags.signature !== undefined) raw = { ...raw, signature: flags.signature };
  const parsed = receiverFileSchema.safeParse(raw);
  if (parsed.success) return { ok: true, receiver: parsed.data };
  // Never echo a value from the file: it may be a credential; the domain's messages name only fields.
  return { ok: false, issues: parsed.error.issues.map((i) => ({ path: i.path[0] === 'signature' && flags.signature !== undefined ? '--signature' : ['--receiver', ...i.path.map(String)].join('.'), message: i.message })) };
}

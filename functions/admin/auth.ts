import type http from 'node:http';
import { authenticate } from '../../shared/app/access/authenticate';
import { keyCaller } from '../../shared/app/access/key-verifier';
import { Caller, hasScope, OPERATOR, scopeFor } from '../../shared/domain/access/account';
import { portalKeyOf, portalSecretOf } from '../../shared/domain/access/portal';
import { Runtime } from '../../shared/runtime/runtime';
import { admitted, BareRequest, checkedOnce } from '../http';

/** A public route's caller: reaches no account and holds no scope (a public route needs neither). */
export const NOBODY: Caller = { kind: 'portal', account: '', sessionId: 'anonymous', scopes: [] };

/** The portal signing key of a runtime: derived once (every instance derives the same). */
const portalKeys = new WeakMap<Runtime, Buffer>();
export function portalKeyFor(rt: Runtime): Buffer {
  let key = portalKeys.get(rt);
  if (!key) {
    key = portalKeyOf(portalSecretOf(rt.config.secretsKey, rt.credentials.admin));
    portalKeys.set(rt, key);
  }
  return key;
}

/**
 * Who is calling: the admin token is the operator; an account key (`hk_…`) acts for its
 * account; a portal session (`hps_…`) for its account, as its link said. Anything else is
 * refused with 401 (answered here), and says which credential to send.
 */
export async function callerOf(req: BareRequest, res: http.ServerResponse, rt: Runtime): Promise<Caller | undefined> {
  const bearer = admitted(res, await checkedOnce(req, () => authenticate(rt, { token: rt.credentials.admin, expects: 'admin token or account key', portalKey: portalKeyFor(rt) }, req.headers.authorization)));
  if (!bearer) return undefined;
  return bearer.kind === 'token' ? OPERATOR : bearer.kind === 'key' ? keyCaller(bearer.key) : bearer.caller;
}

/** Why a key or portal session may not make this request (403), or undefined when its scopes allow it; the operator may do anything. */
export function scopeRefusal(caller: Caller, method: string): string | undefined {
  if (caller.kind === 'operator') return undefined;
  const scope = scopeFor(method);
  if (hasScope(caller, scope)) return undefined;
  if (caller.kind === 'key') return `this key lacks the "${scope}" scope; create a key with it (POST /admin/accounts/${caller.account}/keys)`;
  return scope === 'read' ? 'this portal session cannot read: it was opened from a link without the "read" scope' : 'this portal session is read-only: it can look but not change anything';
}

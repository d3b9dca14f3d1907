import { AddressRules, checkTargetUrl, firstRefused, resolvedRefusal } from '../../domain/access/address-policy';
import { HostResolver } from '../../ports/http';

/** The URL refused (`invalid`), or DNS out of reach so it could not be checked (`unavailable`). */
export type TargetProblem = { kind: 'invalid' | 'unavailable'; message: string };

/** DNS answers that mean the name does not exist (as opposed to DNS being unreachable). */
const NO_SUCH_NAME = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME', 'EAI_NONAME', 'NXDOMAIN']);

/**
 * Registration's SSRF check of a webhook URL: the URL itself, then every address its host
 * resolves to (one refused address refuses the URL). Every attempt checks again at connect
 * time (shared/adapters/guarded-lookup.ts): passing here is necessary, never sufficient.
 */
export async function checkWebhookTarget(url: string, rules: AddressRules, resolver: HostResolver): Promise<TargetProblem | undefined> {
  const verdict = checkTargetUrl(url, rules);
  if (!verdict.ok) return { kind: 'invalid', message: verdict.message };
  if (verdict.literal) return undefined;
  let addresses: { address: string }[];
  try {
    addresses = await resolver.lookup(verdict.host);
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NO_SUCH_NAME.has(code)) {
      return { kind: 'invalid', message: `url host ${verdict.host} does not resolve (${code}); register the destination once its DNS name exists` };
    }
    return { kind: 'unavailable', message: `could not resolve url host ${verdict.host} (${typeof code === 'string' ? code : 'DNS error'}); try again` };
  }
  if (addresses.length === 0) return { kind: 'invalid', message: `url host ${verdict.host} has no address` };
  const blocked = firstRefused(addresses, rules, verdict.port);
  return blocked ? { kind: 'invalid', message: resolvedRefusal(verdict.host, blocked) } : undefined;
}

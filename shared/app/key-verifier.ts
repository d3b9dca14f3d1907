import { AccountKey, Caller, keyIdOf, KeyVerdict, verifyKey } from '../domain/account';
import { AccountStore, Clock } from '../ports';

/**
 * How long a key's record is trusted without reading it again: a revoked or expired key is
 * refused everywhere within this (the contract says 5 s; this leaves a second for the read).
 */
export const KEY_CACHE_MS = 4_000;

/**
 * Account keys presented as bearer tokens: each instance reads a key's record at most once
 * per KEY_CACHE_MS (an unknown id too, so guessing costs no Firestore read per try), and
 * compares the presented key's hash in constant time.
 */
export class KeyVerifier {
  private readonly cache = new Map<string, { record: AccountKey | undefined; readAt: number }>();

  constructor(
    private readonly store: Pick<AccountStore, 'getKey'>,
    private readonly clock: Clock,
    private readonly cacheMs = KEY_CACHE_MS,
  ) {}

  /** A verdict for a token with a key's shape; undefined for anything else (not a key at all). */
  async verify(token: string): Promise<KeyVerdict | undefined> {
    const id = keyIdOf(token);
    if (id === undefined) return undefined;
    const now = this.clock.now();
    let entry = this.cache.get(id);
    if (!entry || now.getTime() - entry.readAt >= this.cacheMs) {
      entry = { record: await this.store.getKey(id), readAt: now.getTime() };
      this.cache.set(id, entry);
      if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value!);
    }
    return verifyKey(token, entry.record, now);
  }

  /** Forgets a key at once on this instance (its revocation here); others see it within KEY_CACHE_MS. */
  forget(id: string): void {
    this.cache.delete(id);
  }
}

/** The caller an accepted key stands for. */
export function keyCaller(key: AccountKey): Caller {
  return { kind: 'key', account: key.account, keyId: key.id, scopes: key.scopes };
}

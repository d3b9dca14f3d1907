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
  private readonly cache = new Map<string, { record: Promise<AccountKey | undefined>; readAt: number }>();

  constructor(
    private readonly store: Pick<AccountStore, 'getKey'>,
    private readonly clock: Clock,
    private readonly cacheMs = KEY_CACHE_MS,
  ) {}

  /** A verdict for a token with a key's shape; undefined for anything else (not a key at all). */
  async verify(token: string): Promise<KeyVerdict | undefined> {
    const id = keyIdOf(token);
    if (id === undefined) return undefined;
    const record = await this.record(id);
    return verifyKey(token, record, this.clock.now());
  }

  /** Key `id`'s record as this instance last read it, at most KEY_CACHE_MS ago (a portal link minted by the key checks it here). */
  async record(id: string): Promise<AccountKey | undefined> {
    const now = this.clock.now();
    let entry = this.cache.get(id);
    if (!entry || now.getTime() - entry.readAt >= this.cacheMs) {
      // The read itself is kept, so requests that arrive while it runs share it; a failed one is not.
      const read = this.store.getKey(id);
      const fresh = { record: read, readAt: now.getTime() };
      entry = fresh;
      this.cache.set(id, fresh);
      read.catch(() => {
        if (this.cache.get(id) === fresh) this.cache.delete(id);
      });
      if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value!);
    }
    return entry.record;
  }

  /** Forgets a key at once on this instance (its revocation here); others see it within KEY_CACHE_MS. */
  forget(id: string): void {
    this.cache.delete(id);
  }
}

/** The caller an accepted key stands for. */
export function keyCaller(key: AccountKey): Caller {
  return { kind: 'key', account: key.account, keyId: key.id, scopes: key.scopes, ...(key.expiresAt !== undefined ? { expiresAt: key.expiresAt } : {}) };
}

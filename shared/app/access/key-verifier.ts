import { AccountKey, Caller, keyIdOf, KeyVerdict, verifyKey } from '../../domain/access/account';
import { AccountStore } from '../../ports/accounts';
import { Clock, Logger } from '../../ports/clock';

/**
 * How long a key's record is trusted without reading it again: a revoked or expired key is
 * refused everywhere within this (the contract says 5 s; this leaves a second for the read).
 */
export const KEY_CACHE_MS = 4_000;

/** Key records an instance keeps; past it the one read longest ago is forgotten (read again when next presented). */
export const KNOWN_KEYS_MAX = 10_000;
/** Ids found to name no key that an instance remembers: apart from the known ones, so a flood of made-up ids never pushes a real key out. */
export const UNKNOWN_KEYS_MAX = 10_000;
/**
 * Reads per second an instance spends on ids it does not know as keys (never seen here, or
 * seen to name none), after a burst of UNKNOWN_KEY_READS_BURST (a fresh instance meeting many
 * tenants' keys at once). Past it such an id is refused (401, "send it again in a second")
 * without a read: a flood of made-up keys costs a bounded number of Firestore reads, whatever
 * its size. Keys known here are always read again when due, so revocation stays within 5 s.
 */
export const UNKNOWN_KEY_READS_PER_SECOND = 50;
export const UNKNOWN_KEY_READS_BURST = 500;

/** Why a well-formed key was refused beyond the verdict itself: this instance looked up too many unknown ids just now. */
export type KeyRefusal = KeyVerdict | { ok: false; reason: 'busy' };

interface Entry {
  record: Promise<AccountKey | undefined>;
  readAt: number;
}

/**
 * Account keys presented as bearer tokens: each instance reads a key's record at most once
 * per KEY_CACHE_MS (an unknown id too, so guessing costs no Firestore read per try), and
 * compares the presented key's hash in constant time. Records found and ids found to name no
 * key are held apart, each bounded, and reads of ids not known as keys are rate-limited.
 */
export class KeyVerifier {
  private readonly known = new Map<string, Entry>();
  private readonly unknown = new Map<string, number>();
  /** Reads in flight of ids not known as keys: requests that arrive while one runs share it. */
  private readonly looking = new Map<string, Promise<AccountKey | undefined>>();
  private tokens: number;
  private refilledAt: number;
  private warnedAt = -Infinity;

  constructor(
    private readonly store: Pick<AccountStore, 'getKey'>,
    private readonly clock: Clock,
    private readonly cacheMs = KEY_CACHE_MS,
    private readonly log?: Logger,
    private readonly unknownReads = { perSecond: UNKNOWN_KEY_READS_PER_SECOND, burst: UNKNOWN_KEY_READS_BURST },
  ) {
    this.tokens = unknownReads.burst;
    this.refilledAt = clock.now().getTime();
  }

  /** A verdict for a token with a key's shape; undefined for anything else (not a key at all). */
  async verify(token: string): Promise<KeyRefusal | undefined> {
    const id = keyIdOf(token);
    if (id === undefined) return undefined;
    const record = await this.lookup(id);
    if (record === 'busy') {
      // Compared anyway, so a refusal for load takes as long as any other.
      verifyKey(token, undefined, this.clock.now());
      return { ok: false, reason: 'busy' };
    }
    return verifyKey(token, record, this.clock.now());
  }

  /**
   * Key `id`'s record as this instance last read it, at most KEY_CACHE_MS ago (a portal link
   * minted by the key checks it here). The id comes from a record Herald signed or stored, not
   * from a caller, so its read is never refused for load.
   */
  async record(id: string): Promise<AccountKey | undefined> {
    const found = await this.lookup(id, false);
    return found === 'busy' ? undefined : found;
  }

  /** Forgets a key at once on this instance (its revocation here); others see it within KEY_CACHE_MS. */
  forget(id: string): void {
    this.known.delete(id);
    this.unknown.delete(id);
  }

  private async lookup(id: string, budgeted = true): Promise<AccountKey | undefined | 'busy'> {
    const now = this.clock.now().getTime();
    const held = this.known.get(id);
    if (held) {
      if (now - held.readAt < this.cacheMs) return held.record;
      return this.reread(id, held, now);
    }
    const missedAt = this.unknown.get(id);
    if (missedAt !== undefined && now - missedAt < this.cacheMs) return undefined;
    const inFlight = this.looking.get(id);
    if (inFlight) return inFlight;
    if (budgeted && !this.spendUnknownRead(now)) return 'busy';
    const read = this.store.getKey(id);
    this.looking.set(id, read);
    try {
      const record = await read;
      this.remember(id, record, now);
      return record;
    } finally {
      this.looking.delete(id);
    }
  }

  /** A key known here, read again (the read shared by requests that arrive while it runs; a failed one is not kept). */
  private reread(id: string, stale: Entry, now: number): Promise<AccountKey | undefined> {
    const read = this.store.getKey(id);
    const fresh: Entry = { record: read, readAt: now };
    this.known.set(id, fresh);
    read.then(
      (record) => {
        if (record === undefined && this.known.get(id) === fresh) this.remember(id, undefined, now);
      },
      () => {
        if (this.known.get(id) === fresh) this.known.set(id, { ...stale, readAt: -Infinity });
      },
    );
    return read;
  }

  private remember(id: string, record: AccountKey | undefined, readAt: number): void {
    if (record === undefined) {
      this.known.delete(id);
      this.unknown.delete(id);
      this.unknown.set(id, readAt);
      if (this.unknown.size > UNKNOWN_KEYS_MAX) this.unknown.delete(this.unknown.keys().next().value!);
      return;
    }
    this.unknown.delete(id);
    this.known.delete(id);
    this.known.set(id, { record: Promise.resolve(record), readAt });
    if (this.known.size > KNOWN_KEYS_MAX) this.known.delete(this.known.keys().next().value!);
  }

  /** A token bucket of reads for ids not known as keys. */
  private spendUnknownRead(now: number): boolean {
    const { perSecond: rate, burst } = this.unknownReads;
    this.tokens = Math.min(burst, this.tokens + ((now - this.refilledAt) / 1000) * rate);
    this.refilledAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    if (now - this.warnedAt >= 60_000) {
      this.warnedAt = now;
      this.log?.warn(`more than ${rate} unknown account keys a second were presented to this instance; past that they are refused without a look-up`, { limitPerSecond: rate });
    }
    return false;
  }
}

/** The caller an accepted key stands for. */
export function keyCaller(key: AccountKey): Caller {
  return { kind: 'key', account: key.account, keyId: key.id, scopes: key.scopes, ...(key.expiresAt !== undefined ? { expiresAt: key.expiresAt } : {}) };
}

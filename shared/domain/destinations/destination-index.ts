import type { Destination } from './destination';
import { DEFAULT_ACCOUNT, splitDestinationId } from '../ids';

/**
 * The registry in memory, indexed for routing: the destinations an event of one account and
 * type reaches are found with one lookup per distinct wildcard length that account uses, never
 * by looking at every destination (a deployment may hold 100,000). An event reaches only its
 * own account's destinations.
 */
export class DestinationIndex {
  private readonly byId = new Map<string, Destination>();
  private readonly accounts = new Map<string, TypeIndex>();

  static of(destinations: readonly Destination[]): DestinationIndex {
    const index = new DestinationIndex();
    for (const d of destinations) index.put(d);
    return index;
  }

  get(id: string): Destination | undefined {
    return this.byId.get(id);
  }

  /** How many destinations it holds. */
  get size(): number {
    return this.byId.size;
  }

  /** Removes every destination of `account`. */
  removeAccount(account: string): void {
    const types = this.accounts.get(account);
    if (!types) return;
    for (const id of types.ids()) this.byId.delete(id);
    this.accounts.delete(account);
  }

  put(destination: Destination): void {
    this.remove(destination.id);
    this.byId.set(destination.id, destination);
    const account = splitDestinationId(destination.id).account;
    let types = this.accounts.get(account);
    if (!types) this.accounts.set(account, (types = new TypeIndex()));
    types.put(destination);
  }

  remove(id: string): void {
    const old = this.byId.get(id);
    if (!old) return;
    this.byId.delete(id);
    const account = splitDestinationId(id).account;
    const types = this.accounts.get(account);
    types?.remove(old);
    if (types?.empty) this.accounts.delete(account);
  }

  /** The destinations of `account` an event of `type` goes to (matchesType's rules), by id. */
  matching(type: string, account: string = DEFAULT_ACCOUNT): Destination[] {
    return (this.accounts.get(account)?.matching(type) ?? []).map((id) => this.byId.get(id)!);
  }
}

/** One account's destinations by the event types they take. */
class TypeIndex {
  /** Exact event type → destination ids. */
  private readonly exact = new Map<string, Set<string>>();
  /** Wildcard prefix (`com.example.` for `com.example.*`) → destination ids. */
  private readonly prefixes = new Map<string, Set<string>>();
  /** How many wildcard prefixes of each length exist: only these lengths are looked up. */
  private readonly prefixLengths = new Map<number, number>();
  /** Destinations without eventTypes: every event. */
  private readonly everything = new Set<string>();

  /** Every destination id it holds. */
  ids(): Set<string> {
    const ids = new Set(this.everything);
    for (const set of [...this.exact.values(), ...this.prefixes.values()]) for (const id of set) ids.add(id);
    return ids;
  }

  get empty(): boolean {
    return this.everything.size === 0 && this.exact.size === 0 && this.prefixes.size === 0;
  }

  put(destination: Destination): void {
    if (destination.eventTypes.length === 0) this.everything.add(destination.id);
    for (const pattern of destination.eventTypes) {
      if (pattern.endsWith('*')) {
        const prefix = pattern.slice(0, -1);
        if (add(this.prefixes, prefix, destination.id)) this.prefixLengths.set(prefix.length, (this.prefixLengths.get(prefix.length) ?? 0) + 1);
      } else add(this.exact, pattern, destination.id);
    }
  }

  remove(old: Destination): void {
    const id = old.id;
    this.everything.delete(id);
    for (const pattern of old.eventTypes) {
      if (pattern.endsWith('*')) {
        const prefix = pattern.slice(0, -1);
        if (drop(this.prefixes, prefix, id)) {
          const left = (this.prefixLengths.get(prefix.length) ?? 1) - 1;
          if (left === 0) this.prefixLengths.delete(prefix.length);
          else this.prefixLengths.set(prefix.length, left);
        }
      } else drop(this.exact, pattern, id);
    }
  }

  /** The ids of the destinations an event of `type` goes to, sorted. */
  matching(type: string): string[] {
    const ids = new Set<string>(this.everything);
    for (const id of this.exact.get(type) ?? []) ids.add(id);
    for (const length of this.prefixLengths.keys()) {
      if (length > type.length) continue;
      for (const id of this.prefixes.get(type.slice(0, length)) ?? []) ids.add(id);
    }
    return [...ids].sort();
  }
}

/** Adds `id` under `key`; whether the key is new. */
function add(map: Map<string, Set<string>>, key: string, id: string): boolean {
  const set = map.get(key);
  if (set) {
    set.add(id);
    return false;
  }
  map.set(key, new Set([id]));
  return true;
}

/** Removes `id` from under `key`; whether the key went away. */
function drop(map: Map<string, Set<string>>, key: string, id: string): boolean {
  const set = map.get(key);
  if (!set) return false;
  set.delete(id);
  if (set.size > 0) return false;
  map.delete(key);
  return true;
}

import { Destination } from '../domain/destinations/destination';

/** The destination registry, its change log, and the event-type catalogue. Only shared/adapters/ implements these with SDKs and sockets. */

/** The latest sample of one event type an account published (app/destinations/event-type-samples.ts). */
export interface EventTypeSample {
  account: string;
  type: string;
  /** ISO 8601: when ingest accepted the sampled event (refreshed at most hourly while the type keeps coming). */
  lastSeenAt: string;
  /** The event in CloudEvents JSON (structured mode), or, over the size limit, its attributes and a `truncated` excerpt. */
  sample: Record<string, unknown>;
}

/** One type as the catalogue stores it: its sample as JSON text (Firestore refuses some JSON, arrays in arrays for one). */
export interface EventTypeEntry {
  type: string;
  lastSeenAt: string;
  sample: string;
}

/** A type in one of the account's catalogue documents (`shard`: which). */
export interface CatalogueEntry extends EventTypeEntry {
  shard: number;
}

/** Each account's event types (domain/events/event-type-catalogue.ts), kept by the reconciler from the intake journal (app/destinations/event-type-samples.ts). */
export interface EventTypeStore {
  /**
   * Adds or refreshes some of the account's types: one write per catalogue document named,
   * merged, so types another writer recorded meanwhile stay.
   */
  record(account: string, entries: readonly CatalogueEntry[]): Promise<void>;
  /** What the account's catalogue documents hold (not the per-type documents of before): the catalogue's memory after a restart. */
  known(account: string): Promise<CatalogueEntry[]>;
  /** The account's types, by type: the catalogue's and any older per-type document's, the newest `lastSeenAt` of each. */
  list(account: string): Promise<EventTypeSample[]>;
}

export interface DestinationStore {
  get(id: string): Promise<Destination | undefined>;
  /** Every destination of every account: the whole registry, for what truly means all of it. */
  list(): Promise<Destination[]>;
  /**
   * The destinations of one account, and nothing of any other: a named account's are read by
   * their ids alone (`<account>_…`); `default`'s ids have no such prefix, so its list reads the
   * registry and keeps those without one.
   */
  listAccount(account: string): Promise<Destination[]>;
  /** How many destinations the account has (listAccount's length, for a named account without reading them). */
  countAccount(account: string): Promise<number>;
  /** Writes the whole destination; resolves whether it was created (true) or replaced. */
  put(destination: Destination): Promise<{ created: boolean }>;
  delete(id: string): Promise<boolean>;
  /**
   * Reads one destination, lets `decide` compute its successor, and writes that atomically
   * (as DeliveryStore.update). Resolves with what was written, if anything.
   */
  update(id: string, decide: (current: Destination | undefined) => Destination | undefined): Promise<Destination | undefined>;
  /**
   * What changed since `since`, a `readTime` this method returned before; undefined: nothing,
   * only where the log stands now (a fresh directory starts from there, reading no
   * destination). A store without it has each account the directory holds reloaded.
   */
  changesSince?(since: Date | undefined): Promise<DestinationChanges>;
}

export interface DestinationChanges {
  upserted: Destination[];
  removed: string[];
  /** Pass it back as `since` next time. */
  readTime: Date;
}

import { typeHash } from '../../domain/events/event-type-catalogue';
import { CatalogueEntry, EventTypeEntry, EventTypeSample, EventTypeStore } from '../../ports/destinations';

/** The event-type catalogue in Maps, shaped as the Firestore one (documents per account, each a map of types): unit tests. */
export class MemoryEventTypeStore implements EventTypeStore {
  /** `${account}~types-${shard}` → hash → entry. */
  readonly docs = new Map<string, Map<string, EventTypeEntry>>();
  /** Document writes made (one per shard a `record` touches), to show how few there are. */
  writes = 0;
  /** `known` calls, to show the catalogue reads an account once. */
  knownReads = 0;

  async record(account: string, entries: readonly CatalogueEntry[]): Promise<void> {
    const touched = new Set<string>();
    for (const e of entries) {
      const id = `${account}~types-${e.shard}`;
      const doc = this.docs.get(id) ?? new Map<string, EventTypeEntry>();
      doc.set(typeHash(e.type), { type: e.type, lastSeenAt: e.lastSeenAt, sample: e.sample });
      this.docs.set(id, doc);
      touched.add(id);
    }
    this.writes += touched.size;
  }

  async known(account: string): Promise<CatalogueEntry[]> {
    this.knownReads++;
    return [...this.docs.entries()].filter(([id]) => id.startsWith(`${account}~`)).flatMap(([id, doc]) => [...doc.values()].map((e) => ({ ...e, shard: Number(id.slice(id.lastIndexOf('-') + 1)) })));
  }

  /** By type; a type in two documents (two writers placed it) once, the newest. */
  async list(account: string): Promise<EventTypeSample[]> {
    const newest = new Map<string, EventTypeEntry>();
    for (const [id, doc] of this.docs) {
      if (!id.startsWith(`${account}~`)) continue;
      for (const e of doc.values()) if ((newest.get(e.type)?.lastSeenAt ?? '') < e.lastSeenAt) newest.set(e.type, e);
    }
    return [...newest.values()]
      .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
      .map((e) => ({ account, type: e.type, lastSeenAt: e.lastSeenAt, sample: JSON.parse(e.sample) as Record<string, unknown> }));
  }
}

import { EventTypeSample, EventTypeStore } from '../../ports';

/** The event type samples in a Map: unit tests. */
export class MemoryEventTypeStore implements EventTypeStore {
  readonly samples = new Map<string, EventTypeSample>();
  /** Writes made, to show how few there are. */
  puts = 0;

  async put(sample: EventTypeSample): Promise<void> {
    this.puts++;
    this.samples.set(`${sample.account}\n${sample.type}`, structuredClone(sample));
  }

  async list(account: string): Promise<EventTypeSample[]> {
    return [...this.samples.values()].filter((s) => s.account === account).sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
  }
}

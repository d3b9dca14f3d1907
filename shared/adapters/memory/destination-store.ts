import { Destination } from '../../domain/destinations/destination';
import { splitDestinationId } from '../../domain/ids';
import { DestinationStore } from '../../ports/destinations';

/** A destination store in a Map, for unit tests of the admin use cases. */
export class MemoryDestinationStore implements DestinationStore {
  private readonly destinations = new Map<string, Destination>();

  async get(id: string): Promise<Destination | undefined> {
    const d = this.destinations.get(id);
    return d && structuredClone(d);
  }

  async list(): Promise<Destination[]> {
    return [...this.destinations.values()].map((d) => structuredClone(d));
  }

  async listAccount(account: string): Promise<Destination[]> {
    return (await this.list()).filter((d) => splitDestinationId(d.id).account === account);
  }

  async countAccount(account: string): Promise<number> {
    return (await this.listAccount(account)).length;
  }

  async put(destination: Destination): Promise<{ created: boolean }> {
    const created = !this.destinations.has(destination.id);
    this.destinations.set(destination.id, structuredClone(destination));
    return { created };
  }

  async delete(id: string): Promise<boolean> {
    return this.destinations.delete(id);
  }

  async update(id: string, decide: (current: Destination | undefined) => Destination | undefined): Promise<Destination | undefined> {
    const next = decide(await this.get(id));
    if (next !== undefined) this.destinations.set(id, structuredClone(next));
    return next && structuredClone(next);
  }
}

import { Timestamp } from '@google-cloud/firestore';
import { COLLECTIONS } from '../../firestore-schema';
import { LaneMarks } from '../../ports/intake';
import { FirestoreStore } from './stores';

/** Lane marks (domain/intake/lane-backlog.ts): `lane-marks/<lane topic>`, `{at}`, written blind (the latest mark wins), read together. */
export class FirestoreLaneMarks extends FirestoreStore implements LaneMarks {
  private ref(lane: string) {
    return this.db.collection(COLLECTIONS.laneMarks).doc(lane);
  }

  async mark(lane: string, at: Date): Promise<void> {
    await this.ref(lane).set({ at: Timestamp.fromDate(at) });
    this.ops.writes++;
  }

  async read(lanes: readonly string[]): Promise<Map<string, number>> {
    const marks = new Map<string, number>();
    if (lanes.length === 0) return marks;
    const snaps = await this.db.getAll(...lanes.map((lane) => this.ref(lane)));
    this.ops.reads += snaps.length;
    for (const snap of snaps) {
      const at: unknown = snap.get('at');
      if (at instanceof Timestamp) marks.set(snap.id, at.toMillis());
    }
    return marks;
  }
}

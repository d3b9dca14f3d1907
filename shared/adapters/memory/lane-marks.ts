import { LaneMarks } from '../../ports/intake';

/** Lane marks in memory (tests): the last mark of each lane, and how many were written. */
export class MemoryLaneMarks implements LaneMarks {
  readonly marks = new Map<string, number>();
  writes = 0;

  async mark(lane: string, at: Date): Promise<void> {
    this.writes++;
    this.marks.set(lane, at.getTime());
  }

  async read(lanes: readonly string[]): Promise<Map<string, number>> {
    return new Map(lanes.flatMap((lane) => (this.marks.has(lane) ? [[lane, this.marks.get(lane)!] as const] : [])));
  }
}

import { bucketsOf, headOf, keepNewest, RECENT_KEPT, RecentEntry, recentList } from '../../../shared/domain/delivery/recent-log';

const T = Date.parse('2026-11-26T10:00:00.000Z');
const iso = (s: number) => new Date(T + s * 1000).toISOString();
const e = (s: number, id = `d.k${s}`): RecentEntry => [iso(s), id];

describe('the head of the delivery log', () => {
  test('keepNewest keeps the newest by publish time, then id, each record once, at most the cap', () => {
    let list: RecentEntry[] = [];
    for (const s of [5, 1, 9, 3, 9]) list = keepNewest(list, e(s), 3);
    expect(list).toEqual([e(9), e(5), e(3)]);
    expect(keepNewest(list, e(0), 3)).toEqual(list);
    expect(keepNewest([e(5, 'd.a')], e(5, 'd.b'), 3)).toEqual([e(5, 'd.b'), e(5, 'd.a')]);
    let full: RecentEntry[] = [];
    for (let s = 0; s < RECENT_KEPT + 10; s++) full = keepNewest(full, e(s));
    expect(full).toHaveLength(RECENT_KEPT);
    expect(full[0]).toEqual(e(RECENT_KEPT + 9));
  });

  test('complete only when `want` entries were published at or after the oldest bucket read', () => {
    const minute = 60;
    const buckets = [
      { start: T + 2 * minute * 1000, entries: [e(150), e(130)] },
      { start: T + minute * 1000, entries: [e(100), e(70)] },
    ];
    // Four entries since the older bucket's start (T + 60 s): a head of 3 is certain.
    expect(headOf(buckets, 3)).toEqual([e(150), e(130), e(100)]);
    expect(headOf(buckets, 4)).toEqual([e(150), e(130), e(100), e(70)]);
    // A fifth would have to come from an older bucket, unread.
    expect(headOf(buckets, 5)).toBeUndefined();
    // Created late in a newer bucket, published before the oldest bucket read: it does not prove the head.
    expect(headOf([{ start: T + minute * 1000, entries: [e(100), e(10)] }], 2)).toBeUndefined();
    expect(headOf([], 1)).toBeUndefined();
  });

  test("a full list proves nothing older than its oldest: the entries it dropped may be newer than an older bucket's", () => {
    const minute = 60;
    // One writer's busy bucket: RECENT_KEPT + 10 records, of which its list keeps the newest RECENT_KEPT.
    let list: RecentEntry[] = [];
    for (let i = 0; i < RECENT_KEPT + 10; i++) list = keepNewest(list, e(2 * minute + i / 2));
    const older = recentList(T + minute * 1000, [e(100), e(90)]);
    const buckets = bucketsOf([recentList(T + 2 * minute * 1000, list), older]);
    // Its own kept records are certain; the next would be a dropped one of its bucket, not e(100).
    expect(headOf(buckets, RECENT_KEPT)).toEqual(list);
    expect(headOf(buckets, RECENT_KEPT + 1)).toBeUndefined();
    // Another writer's list of the same bucket, not full, proves its own entries only above that floor too.
    const other = recentList(T + 2 * minute * 1000, [e(2 * minute + 1, 'd.other')]);
    expect(headOf(bucketsOf([...buckets, other]), RECENT_KEPT + 2)).toBeUndefined();
    // Lists below the cap carry no floor: a head reaching into the older bucket is proved.
    expect(headOf(bucketsOf([recentList(T + 2 * minute * 1000, list.slice(0, RECENT_KEPT - 1)), older]), RECENT_KEPT + 1)).toEqual([...list.slice(0, RECENT_KEPT - 1), e(100), e(90)]);
  });

  test('the same record from two writers counts once', () => {
    expect(headOf([{ start: T, entries: [e(5), e(4)] }, { start: T, entries: [e(5), e(3)] }], 3)).toEqual([e(5), e(4), e(3)]);
  });

  test('a delivery recorded twice (alone and in a group, or in two groups) is one entry in a list, naming every copy', () => {
    // A push redelivered while its first attempt ran: a copy alone, then one in group g1, then one in g2.
    let list: RecentEntry[] = [];
    for (const id of ['d.k5', 'd.k5~g1', 'd.k4', 'd.k5~g2', 'd.k5~g1']) list = keepNewest(list, [iso(id === 'd.k4' ? 4 : 5), id], 3);
    expect(list).toEqual([e(5, 'd.k5~g1~g2'), e(4)]);
    // Its copies take one place of the cap, not one each.
    expect(keepNewest(keepNewest(list, e(3)), e(5, 'd.k5~g3'), 3)).toEqual([e(5, 'd.k5~g1~g2~g3'), e(4), e(3)]);
  });

  test("one delivery in several writers' or buckets' lists is one row of the head, with every group they name", () => {
    const buckets = [
      { start: T, entries: [e(6, 'd.k6~g1'), e(5), e(4)] },
      // Another writer's list: the same delivery sent again there (a batch released and sent again after part of it committed).
      { start: T, entries: [e(6, 'd.k6~g2'), e(3)] },
      { start: T, entries: [e(6, 'd.k6')] },
    ];
    expect(headOf(buckets, 3)).toEqual([e(6, 'd.k6~g1~g2'), e(5), e(4)]);
    expect(headOf(buckets, 4)).toEqual([e(6, 'd.k6~g1~g2'), e(5), e(4), e(3)]);
    expect(headOf(buckets, 5)).toBeUndefined();
  });

  test('entries at one publish time are ordered by delivery id, as the log orders, whatever groups they name', () => {
    // `~` sorts after every character of an id: compared whole, d.a~g would come before d.ab.
    expect(headOf([{ start: T, entries: [e(5, 'd.a~g'), e(5, 'd.ab')] }], 2)).toEqual([e(5, 'd.ab'), e(5, 'd.a~g')]);
  });

  test('lists of one bucket are put together; a read cut at its limit leaves its oldest bucket out', () => {
    const lists = [
      { start: T + 120_000, entries: [e(130)] },
      { start: T + 60_000, entries: [e(70)] },
      { start: T + 120_000, entries: [e(125)] },
      { start: T, entries: [e(5)] },
    ];
    expect(bucketsOf(lists)).toEqual([
      { start: T + 120_000, entries: [e(130), e(125)] },
      { start: T + 60_000, entries: [e(70)] },
      { start: T, entries: [e(5)] },
    ]);
    expect(bucketsOf(lists, true).map((b) => b.start)).toEqual([T + 120_000, T + 60_000]);
    expect(bucketsOf([], true)).toEqual([]);
  });
});

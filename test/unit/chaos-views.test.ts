import { usageMismatches, viewsLedger, viewsMismatches } from '../chaos/views';

const wid = (deliveryId: string) => `msg_${deliveryId.slice(2)}`;
const answers = (requests: Record<string, number>, answered: Record<string, number>, answered2xx: Record<string, number>) => ({
  requests: new Map(Object.entries(requests)),
  answered: new Map(Object.entries(answered)),
  answered2xx: new Map(Object.entries(answered2xx)),
});

describe("the chaos test's check of what Herald shows", () => {
  test('a delivery on two rows, a duplicate recorded beyond the sends, and counts off are each named', () => {
    const pages = [
      [
        { id: 'd.k1', status: 'DELIVERED' },
        { id: 'd.k1', status: 'DELIVERED' },
        { id: 'd.k2', status: 'DELIVERED', duplicates: { count: 2 } },
      ],
      [{ id: 'd.k3', status: 'DELIVERED' }, { id: 'd.k2', status: 'DELIVERED', duplicates: { count: 2 } }],
    ];
    // k2 reached the receiver twice: one duplicate stands behind a send, the other does not.
    const l = viewsLedger('d', pages, answers({ msg_k1: 1, msg_k2: 2, msg_k3: 1 }, { msg_k1: 1, msg_k2: 2, msg_k3: 1 }, { msg_k1: 1, msg_k2: 2, msg_k3: 1 }), { attempts: 5, successes: 5 }, wid);
    expect(l).toMatchObject({ rowsShownTwice: 2, firstPageShownTwice: 1, recordedDuplicates: 2, phantomDuplicates: 1, receiver: { requests: 4, answered: 4, answered2xx: 4 } });
    const said = viewsMismatches(l, false).join('\n');
    expect(said).toMatch(/2 deliveries shown twice in the log \(1 on its first page\)/);
    expect(said).toMatch(/1 recorded duplicates that were never sent/);
    expect(said).toMatch(/5 successes, the receiver answered 2xx 4 times/);
    expect(said).toMatch(/5 attempts, the receiver answered 4 requests/);
  });

  test('an exact view has no mismatch; a receiver that refused connections may have seen fewer attempts, never fewer successes', () => {
    const pages = [[{ id: 'd.k1', status: 'DELIVERED' }, { id: 'd.k2', status: 'DEAD' }]];
    const receiver = answers({ msg_k1: 2, msg_k2: 1 }, { msg_k1: 2, msg_k2: 1 }, { msg_k1: 1 });
    expect(viewsMismatches(viewsLedger('d', pages, receiver, { attempts: 3, successes: 1 }, wid), false)).toEqual([]);
    // Two attempts met a closed port.
    expect(viewsMismatches(viewsLedger('d', pages, receiver, { attempts: 5, successes: 1 }, wid), true)).toEqual([]);
    expect(viewsMismatches(viewsLedger('d', pages, receiver, { attempts: 5, successes: 1 }, wid), false)).toHaveLength(1);
    expect(viewsMismatches(viewsLedger('d', pages, receiver, { attempts: 2, successes: 1 }, wid), true)).toHaveLength(1);
  });
});

describe('usage against what the run saw (issue 57)', () => {
  const seen = { accepted: 100, unansweredTries: 0, records: 200, delivered: 190, answered: 230, answered2xx: 190 };
  const exact = { eventsAccepted: 100, deliveries: 200, delivered: 190, attempts: 230, successes: 190 };

  test('equal counts: nothing said; each count off is named, the journal\'s (judged under kills too) apart from the flushed ones', () => {
    expect(usageMismatches({ herald: exact, seen }, false, false)).toEqual({ journal: [], killable: [] });
    expect(usageMismatches({ herald: { ...exact, deliveries: 201, successes: 189 }, seen }, false, false)).toEqual({ journal: ['usage counts 201 deliveries, the run saw 200'], killable: ['usage counts 189 successful attempts, the run saw 190'] });
  });

  test('tries unanswered: Herald may have accepted more than the run knows, never fewer', () => {
    const unsure = { ...seen, unansweredTries: 2 };
    expect(usageMismatches({ herald: { ...exact, eventsAccepted: 102, deliveries: 204, delivered: 194 }, seen: unsure }, false, false)).toEqual({ journal: [], killable: [] });
    expect(usageMismatches({ herald: { ...exact, eventsAccepted: 99 }, seen: unsure }, false, false)).toEqual({ journal: ['usage counts 99 events accepted, the run saw 100'], killable: [] });
  });

  test('a batched run compares no attempts (its receivers count per event); a refusing receiver, attempts at least those answered', () => {
    expect(usageMismatches({ herald: { ...exact, attempts: 12, successes: 10 }, seen }, false, true)).toEqual({ journal: [], killable: [] });
    expect(usageMismatches({ herald: { ...exact, attempts: 240 }, seen }, true, false)).toEqual({ journal: [], killable: [] });
    expect(usageMismatches({ herald: { ...exact, attempts: 229 }, seen }, true, false)).toEqual({ journal: [], killable: ['usage counts 229 attempts, the run saw 230'] });
  });
});

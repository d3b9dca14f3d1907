import { viewsLedger, viewsMismatches } from '../chaos/views';

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

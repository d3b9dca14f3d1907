import { analyseRecovery } from '../bench/rate-analysis';

/** `npm run bench -- rate --hang`: how the deferred backlog came back, from the receiver's logs. */

const T0 = 1_800_000_000_000;
const ok = (id: string, s: number) => ({ id, status: 204, at: T0 + s * 1000 });

test('the backlog is what was published during the hang and not attempted then; drained when the last of it is delivered', () => {
  const r = analyseRecovery({
    target: 4,
    t0: T0,
    seconds: 10,
    duringHang: ['a', 'b', 'c', 'd'],
    // a was attempted while the receiver hung (it timed out: its retry policy has it).
    hangRequests: [{ id: 'a', status: 0, at: 5 }],
    requests: [
      ok('new1', 0.1),
      ok('c', 0.2),
      ok('new2', 0.3),
      ok('b', 0.4),
      // A duplicate later does not move the drain.
      ok('d', 1.5),
      ok('b', 3),
      ok('new3', 1.6),
      ok('new4', 1.7),
      ok('new5', 1.8),
    ],
  });
  expect(r).toMatchObject({ publishedDuringHang: 4, attemptedDuringHang: 1, backlog: 3, backlogDelivered: 3, drainedSeconds: 1.5, atMinimumRateSeconds: 3 });
  // 80 % of 4/s (4 in a sliding second) first at 0.4 s; from then to the drain (1.1 s), 2 delivered.
  expect(r.drainingRatio).toBeCloseTo(2 / 1.1 / 4, 3);
});

test('a backlog not all delivered in the run has no drain time', () => {
  const r = analyseRecovery({ target: 10, t0: T0, seconds: 5, duringHang: ['a', 'b'], hangRequests: [], requests: [ok('a', 1), ok('b', 7)] });
  expect(r).toMatchObject({ backlog: 2, backlogDelivered: 1 });
  expect(r.drainedSeconds).toBeUndefined();
});

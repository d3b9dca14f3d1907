import { Firestore } from '@google-cloud/firestore';
import { loseReplies } from '../support/lost-replies';

/**
 * The test fault itself (test/support/lost-replies.ts) on the Firestore emulator: a commit whose
 * reply is lost has taken effect, the caller sees DEADLINE_EXCEEDED; only the project asked for
 * is touched; a transaction whose commit reply is lost is run again by the client.
 */
const PROJECT = `lost-replies-${Date.now().toString(36)}`;
const db = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });
const other = new Firestore({ projectId: `${PROJECT}-other`, ignoreUndefinedProperties: true });

afterAll(async () => {
  await Promise.all([db.terminate(), other.terminate()]);
});

test('a create whose reply is lost has landed; the caller gets DEADLINE_EXCEEDED and a second create finds it', async () => {
  const fault = loseReplies({ rate: 1, projectId: PROJECT });
  try {
    await expect(db.collection('c').doc('a').create({ n: 1 })).rejects.toMatchObject({ code: 4 });
    // Another project's commits pass untouched.
    await other.collection('c').doc('a').create({ n: 1 });
  } finally {
    fault.stop();
  }
  expect(fault).toMatchObject({ lost: 1, commits: 1 });
  expect((await db.collection('c').doc('a').get()).data()).toEqual({ n: 1 });
  await expect(db.collection('c').doc('a').create({ n: 2 })).rejects.toMatchObject({ code: 6 });
});

test("a transaction whose commit reply is lost is run again by the client, and its second run sees the first one's write", async () => {
  const ref = db.collection('c').doc('tx');
  await ref.set({ n: 0 });
  let draws = 0;
  const fault = loseReplies({ rate: 0.5, projectId: PROJECT, random: () => (draws++ === 0 ? 0 : 0.9) });
  const seen: number[] = [];
  try {
    await db.runTransaction(async (tx) => {
      const n = (await tx.get(ref)).get('n') as number;
      seen.push(n);
      tx.set(ref, { n: n + 1 });
    });
  } finally {
    fault.stop();
  }
  // Not idempotent as written: the increment landed twice. This is what Herald's writes must withstand.
  expect(seen).toEqual([0, 1]);
  expect((await ref.get()).get('n')).toBe(2);
});

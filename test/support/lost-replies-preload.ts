import { loseReplies } from './lost-replies';

/**
 * Loaded with `--import` into a local Herald (spawnLocalHerald's `loseReplies`, the chaos
 * test's `--lose-replies`): HERALD_TEST_LOSE_REPLIES is the share of commits whose reply is lost.
 * Every 10 s while replies are lost, a line on stderr says how many so far.
 */
const rate = Number(process.env.HERALD_TEST_LOSE_REPLIES ?? '0');
if (!(rate >= 0 && rate <= 1)) throw new Error(`HERALD_TEST_LOSE_REPLIES must be a number in [0, 1], got ${process.env.HERALD_TEST_LOSE_REPLIES}`);
if (rate > 0) {
  const fault = loseReplies({ rate });
  let said = 0;
  setInterval(() => {
    if (fault.lost === said) return;
    said = fault.lost;
    process.stderr.write(`${JSON.stringify({ severity: 'NOTICE', message: 'test fault: replies lost after the commit took effect', lost: fault.lost, commits: fault.commits })}\n`);
  }, 10_000).unref();
}

import { Firestore } from '@google-cloud/firestore';

/**
 * A Firestore whose replies to some commits are lost after the write took effect: the commit
 * is sent and lands, then the caller gets DEADLINE_EXCEEDED, as when a reply is dropped on its
 * way back (issue 51). Every commit goes through `Firestore.request('commit', …)` — a batch,
 * a `create`, a `set`, a transaction's — so patching that one method reaches them all, and
 * the client's own handling (a transaction's retry after DEADLINE_EXCEEDED) runs as it would.
 *
 * Test-only: installed in a test's process (`loseReplies`), or in a local Herald's through
 * `--import test/support/lost-replies-preload.ts` with HERALD_TEST_LOSE_REPLIES set.
 */

export interface LostReplies {
  /** Commits that landed and whose reply was then lost. */
  readonly lost: number;
  /** Commits that went through the patch. */
  readonly commits: number;
  /** Stops losing replies (the patch stays, passing everything through). */
  stop(): void;
}

export interface LoseRepliesOptions {
  /** Share of commits whose reply is lost, in [0, 1]. */
  rate: number;
  /** Only commits to this project's databases (default: every project). */
  projectId?: string;
  /** [0, 1): the draw per commit (default Math.random). */
  random?: () => number;
  /** Only commits whose writes touch a document path matching this (default: every commit). */
  paths?: RegExp;
}

type Request = (this: Firestore, methodName: string, request: unknown, requestTag: string, retryCodes?: number[]) => Promise<unknown>;
type Patched = { original: Request; faults: Set<Fault> };
type Fault = { options: LoseRepliesOptions; lost: number; commits: number; stopped: boolean };

const PATCHED = Symbol.for('herald.test.lostReplies');

/** An error as @grpc/grpc-js gives one for a call past its deadline. */
export function deadlineExceeded(): Error & { code: number; details: string } {
  return Object.assign(new Error('4 DEADLINE_EXCEEDED: the reply to this commit was lost (test fault: the write took effect)'), { code: 4, details: 'reply lost (test fault)' });
}

function patch(): Patched {
  const proto = Firestore.prototype as unknown as Record<string | symbol, unknown> & { request: Request };
  const existing = proto[PATCHED] as Patched | undefined;
  if (existing) return existing;
  const patched: Patched = { original: proto.request, faults: new Set() };
  proto[PATCHED] = patched;
  proto.request = async function (this: Firestore, methodName, request, requestTag, retryCodes) {
    const reply = await patched.original.call(this, methodName, request, requestTag, retryCodes);
    if (methodName !== 'commit') return reply;
    for (const fault of patched.faults) {
      if (fault.stopped || !applies(fault.options, request)) continue;
      fault.commits++;
      if ((fault.options.random ?? Math.random)() < fault.options.rate) {
        fault.lost++;
        throw deadlineExceeded();
      }
    }
    return reply;
  };
  return patched;
}

function applies(options: LoseRepliesOptions, request: unknown): boolean {
  const { database, writes } = request as { database?: string; writes?: { update?: { name?: string }; delete?: string; transform?: { document?: string } }[] };
  if (options.projectId !== undefined && !(database ?? '').startsWith(`projects/${options.projectId}/`)) return false;
  if (!options.paths) return true;
  return (writes ?? []).some((w) => options.paths!.test(w.update?.name ?? w.delete ?? w.transform?.document ?? ''));
}

/** Loses the replies to `rate` of the commits this process makes from now on (every Firestore client in it). */
export function loseReplies(options: LoseRepliesOptions): LostReplies {
  if (!(options.rate >= 0 && options.rate <= 1)) throw new Error(`lost-replies rate must be in [0, 1], got ${options.rate}`);
  const fault: Fault = { options, lost: 0, commits: 0, stopped: false };
  const patched = patch();
  patched.faults.add(fault);
  return {
    get lost() {
      return fault.lost;
    },
    get commits() {
      return fault.commits;
    },
    stop() {
      fault.stopped = true;
      patched.faults.delete(fault);
    },
  };
}

import { z } from 'zod';

const listSchema = z.object({ processes: z.array(z.object({ function: z.string(), index: z.number(), pid: z.number().optional(), live: z.boolean(), restarts: z.number() })) });
const restartedSchema = z.object({ pid: z.number().optional() });
type Listed = z.infer<typeof listSchema>['processes'][number];

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** A replaced process starts and listens within this (the rehearsal's supervisor: 200 ms, then the framework's start). */
const BACK_WITHIN_MS = 60_000;

/**
 * The rehearsal's function processes (`GET /rehearsal/processes`), for `npm run chaos -- --rehearsal`:
 * one SIGKILLed at a time, or all replaced in turn as a rollout replaces instances.
 */
export class FunctionProcesses {
  constructor(
    private readonly base: string,
    private readonly adminToken: string,
    private readonly random: () => number,
  ) {}

  async list(): Promise<Listed[]> {
    const res = await fetch(`${this.base}/rehearsal/processes`, { headers: { authorization: `Bearer ${this.adminToken}` }, signal: AbortSignal.timeout(5_000) });
    if (!res.ok) throw new Error(`GET /rehearsal/processes: HTTP ${res.status}`);
    return listSchema.parse(await res.json()).processes;
  }

  /**
   * SIGKILLs one live process of `fn` (any function when none is given), drawn at random, and
   * resolves once the rehearsal has started its replacement.
   */
  async killOne(fn?: string): Promise<string> {
    const live = (await this.list()).filter((p) => p.live && p.pid !== undefined && (fn === undefined || p.function === fn));
    const victim = live[Math.floor(this.random() * live.length)];
    if (!victim) return `no live ${fn ?? ''} process to kill`.replace('  ', ' ');
    process.kill(victim.pid!, 'SIGKILL');
    await this.backAfter(victim);
    return `${victim.function}#${victim.index} (pid ${victim.pid}) SIGKILLed and replaced`;
  }

  /**
   * Each process in turn, as a rollout replaces instances: the rehearsal starts the replacement,
   * takes the old one out of routing, then SIGTERMs it (it finishes what is under way) and answers
   * once it has exited. A SIGTERM sent straight to a pid would leave it in routing while it closes.
   */
  async rollingRestart(say: (line: string) => void): Promise<void> {
    for (const proc of await this.list()) {
      const res = await fetch(`${this.base}/rehearsal/processes/${proc.function}/${proc.index}/restart`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.adminToken}` },
        // The replacement starts (up to BACK_WITHIN_MS), then the old one has its 10 s grace.
        signal: AbortSignal.timeout(BACK_WITHIN_MS + 15_000),
      });
      if (!res.ok) throw new Error(`restarting ${proc.function}#${proc.index}: HTTP ${res.status} ${await res.text()}`);
      const now = restartedSchema.parse(await res.json());
      say(`rolling restart: ${proc.function}#${proc.index} (pid ${proc.pid ?? '?'}) replaced by pid ${now.pid ?? '?'}, then stopped with SIGTERM`);
    }
  }

  private async backAfter(old: Listed): Promise<void> {
    const deadline = Date.now() + BACK_WITHIN_MS;
    while (Date.now() < deadline) {
      const now = (await this.list().catch(() => [])).find((p) => p.function === old.function && p.index === old.index);
      if (now?.live && now.pid !== old.pid) return;
      await sleep(200);
    }
    throw new Error(`${old.function}#${old.index} was not replaced within ${BACK_WITHIN_MS / 1000} s`);
  }
}

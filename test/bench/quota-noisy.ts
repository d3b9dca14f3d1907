/**
 * The quota bench's noisy neighbour, in a process of its own so that its client work is not
 * counted against Herald: sends `BENCH_NOISY_RATE` events/s to `/ingest` with its account's
 * key until told to stop, then reports what came back.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';

const env = z
  .object({ BENCH_NOISY_URL: z.url(), BENCH_NOISY_KEY: z.string().min(1), BENCH_NOISY_RATE: z.coerce.number().int().min(1), BENCH_NOISY_RUN: z.string().min(1) })
  .parse(process.env);

export interface NoisyReport {
  type: 'report';
  sent: number;
  accepted: number;
  refused: number;
  other: number;
  retryAfter: string[];
  seconds: number;
  answerMs: number[];
}

let stop = false;
process.on('message', (m: { type?: string }) => {
  if (m.type === 'stop') stop = true;
});

async function main(): Promise<void> {
  const report: NoisyReport = { type: 'report', sent: 0, accepted: 0, refused: 0, other: 0, retryAfter: [], seconds: 0, answerMs: [] };
  const retryAfter = new Set<string>();
  process.send!({ type: 'ready' });
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; !stop; i++) {
    const wait = start + (i * 1000) / env.BENCH_NOISY_RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    report.sent++;
    const t0 = performance.now();
    pending.push(
      fetch(`${env.BENCH_NOISY_URL}/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.BENCH_NOISY_KEY}`, 'content-type': 'application/json', 'ce-id': `noisy-${env.BENCH_NOISY_RUN}-${i}`, 'ce-source': '/herald-bench-quota', 'ce-type': 'com.example.quota', 'ce-specversion': '1.0' },
        body: '{}',
      }).then(
        async (res) => {
          report.answerMs.push(performance.now() - t0);
          await res.arrayBuffer();
          if (res.status === 202) report.accepted++;
          else if (res.status === 429) {
            report.refused++;
            retryAfter.add(res.headers.get('retry-after') ?? 'none');
          } else report.other++;
        },
        () => void report.other++,
      ),
    );
  }
  await Promise.all(pending);
  report.seconds = (performance.now() - start) / 1000;
  report.retryAfter = [...retryAfter];
  process.send!(report, () => process.exit(0));
}

void main();

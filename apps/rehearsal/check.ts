import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { CheckReceiver } from './check-receiver';

export interface CheckOptions {
  url: string;
  adminToken: string;
  ingestToken: string;
  log: (line: string) => void;
  /** How long each check may wait for what it expects (default 60 s). */
  timeoutMs?: number;
  /**
   * How long a destination registered through one admin instance takes to reach the ingest
   * and deliver instances (HERALD_DESTINATION_CACHE_MS, as on GCP), waited once after every
   * destination is registered.
   */
  propagationMs: number;
}

const createdSchema = z.object({ secret: z.string().startsWith('whsec_') });
const destinationSchema = z.object({ status: z.string(), suspension: z.object({ cause: z.string() }).optional() });
const deliveriesSchema = z.object({ deliveries: z.array(z.object({ status: z.string(), attempts: z.number().optional() }).loose()) });
const replaySchema = z.object({ id: z.string() });
const reportSchema = z.object({ status: z.string(), redelivered: z.number().optional() }).loose();

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * `npm run rehearse -- --check`: the pipeline's paths through separate function processes,
 * over HTTP only, as a user and Pub/Sub and the scheduler reach them: the spine (publish →
 * signed webhook), a retry sent by the scheduled pump, a suspension by the scheduled check, a
 * replay through the replay topic and the console served from dist/. Rejects naming the first
 * that failed.
 */
export async function runChecks(options: CheckOptions): Promise<void> {
  const run = Date.now().toString(36);
  const receiver = new CheckReceiver();
  await receiver.start();
  const timeoutMs = options.timeoutMs ?? 60_000;
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${options.url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${options.adminToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
  const until = async <T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs / 1000} s`);
      await sleep(200);
    }
  };
  const destination = async (id: string, spec: Record<string, unknown>): Promise<string> => {
    const res = await call('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`rehearsal.${id}`], ...spec });
    if (res.status !== 201) throw new Error(`PUT /admin/destinations/${id} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return createdSchema.parse(res.body).secret;
  };
  const publish = async (id: string, eventId: string): Promise<void> => {
    const res = await fetch(`${options.url}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${options.ingestToken}`, 'ce-specversion': '1.0', 'ce-id': eventId, 'ce-source': '/rehearsal', 'ce-type': `rehearsal.${id}`, 'content-type': 'application/json' },
      body: JSON.stringify({ check: id, eventId }),
    });
    if (res.status !== 202) throw new Error(`POST /ingest answered ${res.status}: ${await res.text()}`);
  };
  const deliveryOf = async (id: string, eventId: string) => {
    const res = await call('GET', `/destinations/${id}/deliveries?eventId=${encodeURIComponent(eventId)}`);
    return res.status === 200 ? deliveriesSchema.parse(res.body).deliveries[0] : undefined;
  };
  const step = async (name: string, body: () => Promise<string>) => {
    const began = Date.now();
    options.log(`check: ${name} …`);
    const detail = await body();
    options.log(`check: ${name}: ok in ${Date.now() - began} ms (${detail})`);
  };
  const ids = { spine: `spine-${run}`, retry: `retry-${run}`, suspend: `suspend-${run}`, replay: `replay-${run}` };
  try {
    // Fails once; adobe-best-effort retries a 503 after 15 s (scaled by HERALD_TIME_SCALE), which only the pump sends.
    receiver.answers.set(`/${ids.retry}`, (n) => (n === 0 ? 503 : 204));
    receiver.answers.set(`/${ids.suspend}`, () => 500);
    // A 400 is DEAD at once under adobe-best-effort; the receiver takes it the second time.
    receiver.answers.set(`/${ids.replay}`, (n) => (n === 0 ? 400 : 204));
    const threshold = { retryOn: { statuses: [] }, backoff: { kind: 'fixed', delaysMs: [1000] }, maxAttempts: 1, threshold: { successRate: 0.95, windowMs: 3_600_000, minSample: 5 } };
    const secret = await destination(ids.spine, {});
    await destination(ids.retry, { policy: 'adobe-best-effort' });
    await destination(ids.suspend, { policy: threshold });
    await destination(ids.replay, { policy: 'adobe-best-effort' });
    options.log(`check: 4 destinations registered; waiting ${options.propagationMs} ms for every instance's directory to see them (HERALD_DESTINATION_CACHE_MS)`);
    await sleep(options.propagationMs);
    await step('spine: publish → signed webhook', async () => {
      const id = ids.spine;
      await publish(id, `${id}-1`);
      const got = await until(`the webhook of ${id}`, () => receiver.on(`/${id}`)[0]);
      new Webhook(secret).verify(got.body, got.headers as Record<string, string>);
      return `signature verified, webhook-id ${String(got.headers['webhook-id'])}`;
    });
    await step('retry through the scheduled pump', async () => {
      const id = ids.retry;
      await publish(id, `${id}-1`);
      const record = await until(`${id}-1 DELIVERED after a retry`, async () => {
        const d = await deliveryOf(id, `${id}-1`);
        return d?.status === 'DELIVERED' ? d : undefined;
      });
      const requests = receiver.on(`/${id}`).length;
      if (requests !== 2) throw new Error(`${id}-1: expected 2 requests (a 503, then the retry), got ${requests}`);
      return `2 requests, ${JSON.stringify(record.attempts ?? '?')} attempts recorded`;
    });
    await step('suspension by the scheduled check', async () => {
      const id = ids.suspend;
      for (let i = 0; i < 6; i++) await publish(id, `${id}-${i}`);
      const d = await until(`${id} suspended`, async () => {
        const res = await call('GET', `/destinations/${id}`);
        const body = destinationSchema.parse(res.body);
        return body.status === 'suspended' ? body : undefined;
      });
      if (d.suspension?.cause !== 'threshold') throw new Error(`${id} was suspended by ${d.suspension?.cause ?? '?'}, not by the threshold check`);
      return 'cause threshold';
    });
    await step('replay through the replay topic', async () => {
      const id = ids.replay;
      await publish(id, `${id}-1`);
      await until(`${id}-1 DEAD`, async () => ((await deliveryOf(id, `${id}-1`))?.status === 'DEAD' ? true : undefined));
      const res = await call('POST', '/replays', { destination: id });
      if (res.status !== 202) throw new Error(`POST /admin/replays answered ${res.status}: ${JSON.stringify(res.body)}`);
      const { id: replayId } = replaySchema.parse(res.body);
      await until(`${id}-1 delivered again by replay ${replayId}`, async () => ((await deliveryOf(id, `${id}-1`))?.status === 'DELIVERED' ? true : undefined));
      const report = reportSchema.parse((await call('GET', `/replays/${replayId}`)).body);
      return `replay ${replayId} ${report.status}, ${receiver.on(`/${id}`).length} requests`;
    });
    await step('console served from dist/', async () => {
      const res = await fetch(`${options.url}/console`);
      const html = await res.text();
      if (res.status !== 200 || !/<html/i.test(html)) throw new Error(`GET /console ended at ${res.url} with ${res.status}, not the console's page`);
      const script = /src="([^"]+\.js)"/.exec(html)?.[1];
      if (script) {
        const asset = await fetch(new URL(script, res.url));
        if (asset.status !== 200) throw new Error(`the console's script ${script} answered ${asset.status}`);
      }
      return `${res.url}, ${html.length} bytes${script ? `, ${script}` : ''}`;
    });
  } finally {
    await receiver.stop();
  }
}

import { randomBytes } from 'node:crypto';
import { RESEND_HEADER } from '../../shared/domain/intake/resend';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventKey } from '../../shared/domain/events/event';
import { unpackGroup } from '../../shared/adapters/firestore/deliveries/stored-group';
import { webhookIdFor } from '../../shared/domain/delivery/signing';
import { DELIVERY_STATUSES, DeliveryStatus } from '../../shared/domain/retry/delivery';
import { freePort, startEmulators } from '../../apps/local/emulators';
import { buildPackage } from '../../infra/build';
import { ChaosReceiver } from './chaos-receiver';
import { FunctionProcesses } from './function-processes';
import { HeraldProcess } from './herald-process';
import { DestinationLedger, isQuiet, ledgerFor, RecordState } from './ledger';
import { LogRow, UsageLedger, viewsLedger, ViewsLedger } from './views';
import { describeRateDoc, describeWaiting, readRateDocs } from './diagnostics';
import { CHAOS_BATCH, CHAOS_KEYS, ChaosOptions, ChaosPlan, planChaos, seededRandom } from './scenario';

export interface ChaosResult {
  seed: number;
  plan: ChaosPlan;
  ledgers: DestinationLedger[];
  /** Events ingest answered 2xx for; only these are owed. */
  accepted: number;
  /** Events never accepted, though retried until the publishing window closed. */
  unaccepted: number;
  /** What ingest answered, every try of every request. */
  ingestAnswers: IngestAnswers;
  /** From the end of publishing until every pair was settled; undefined when it never was. */
  quietAfterMs: number | undefined;
  heraldStarts: number;
  /** Instances of the functions in each start of Herald's process. */
  instances: number;
  logFile: string;
  /** When publishing began (ms since the epoch): the chaos plan's times count from it. */
  startedAt: number;
  /** What Herald's log and stats show, per destination, read once quiet (absent when never quiet). */
  views?: ViewsLedger[];
  /** The account's usage beside what the run saw, read with the views. */
  usage?: UsageLedger;
}

const PROJECT = 'herald-chaos';
/** Herald's settings for the run: schedules played 60× faster, claims retaken after 40 s. */
const HERALD_SETTINGS = {
  HERALD_PROJECT_ID: PROJECT,
  HERALD_TIME_SCALE: '60',
  HERALD_CLAIM_TTL_MS: '40000',
  HERALD_RECONCILE_INTERVAL_MS: '2000',
  HERALD_DELIVERY_TIMEOUT_MS: '5000',
  HERALD_LOG_LEVEL: 'WARNING',
};
/** With --rehearsal: how soon the ingest processes see the destinations admin registered. */
const REHEARSAL_CACHE_MS = 1_000;
/** A producer keeps resending an event it could not publish for this long after the publishing window. */
const PUBLISH_GRACE_MS = 120_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The whole chaos run: its own emulators, Herald as a child process, misbehaving receivers on
 * loopback, SIGKILLs and emulator pauses at the plan's moments while events are published;
 * then it waits for quiet and reads what became of every accepted (event, destination) pair.
 */
export async function runChaos(options: ChaosOptions, note: (line: string) => void): Promise<ChaosResult> {
  const plan = planChaos(options);
  let t0 = Date.now();
  const elapsed = () => ((Date.now() - t0) / 1000).toFixed(1).padStart(6);
  const say = (line: string) => note(`[chaos ${elapsed()} s] ${line}`);
  const logFile = path.join(tmpdir(), `herald-chaos-${options.seed}-${Date.now()}.log`);

  const emulators = await startEmulators({ env: { ...process.env, PUBSUB_EMULATOR_HOST: '', FIRESTORE_EMULATOR_HOST: '' } });
  const receivers = plan.receivers.map((r, i) => new ChaosReceiver(r, seededRandom(options.seed + i + 1), () => t0));
  const tokens = { admin: `chaos-admin-${randomBytes(12).toString('hex')}`, ingest: `chaos-ingest-${randomBytes(12).toString('hex')}` };
  const port = await freePort();
  if (options.rehearsal) buildPackage(path.resolve(__dirname, '../..'), say);
  const herald = new HeraldProcess(
    {
      ...process.env,
      ...HERALD_SETTINGS,
      // HERALD_CHAOS_LOG_LEVEL=INFO to see every duplicate's reason in Herald's log.
      ...(process.env.HERALD_CHAOS_LOG_LEVEL ? { HERALD_LOG_LEVEL: process.env.HERALD_CHAOS_LOG_LEVEL } : {}),
      HERALD_RECONCILE_AFTER_MS: String(options.reconcileAfterSeconds * 1000),
      PUBSUB_EMULATOR_HOST: emulators.pubsubHost,
      FIRESTORE_EMULATOR_HOST: emulators.firestoreHost,
      METADATA_SERVER_DETECTION: 'none',
      PORT: String(port),
      HERALD_ADMIN_TOKEN: tokens.admin,
      HERALD_INGEST_TOKEN: tokens.ingest,
      HERALD_PUSH_TOKEN: `chaos-push-${randomBytes(12).toString('hex')}`,
      // The rehearsal's ingest processes see a destination registered through admin within this (10 s by default, as on GCP).
      ...(options.rehearsal ? { HERALD_DESTINATION_CACHE_MS: String(REHEARSAL_CACHE_MS) } : {}),
    },
    logFile,
    options.rehearsal ? ['--no-build'] : ['--instances', String(options.instances)],
    options.loseReplies,
    options.rehearsal ? 'apps/rehearsal/main.ts' : undefined,
  );
  const base = `http://127.0.0.1:${port}`;
  try {
    await Promise.all(receivers.map((r) => r.start()));
    await herald.start();
    for (const r of receivers) {
      // A PUT answered 503 is sent again, as a client would: with --lose-replies, the first may have landed (then 200).
      for (let attempt = 1; ; attempt++) {
        const res = await fetch(`${base}/admin/destinations/${r.plan.destinationId}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${tokens.admin}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url: r.url, policy: r.plan.policy, ...(options.batched ? { batch: CHAOS_BATCH } : {}), ...(options.ordered ? { ordering: 'key' } : {}) }),
        });
        if (res.status === 201 || (attempt > 1 && res.status === 200)) break;
        if (res.status !== 503 || attempt === 5) throw new Error(`registering ${r.plan.destinationId}: HTTP ${res.status} ${await res.text()}`);
        await sleep(500);
      }
    }
    if (options.rehearsal) await sleep(REHEARSAL_CACHE_MS + 1_000);
    say(`seed ${options.seed}: ${options.rehearsal ? 'the rehearsal (each function its own process)' : `${options.instances} instance${options.instances === 1 ? '' : 's'}`}; ${options.events} events at ${options.rate}/s${options.perPost > 1 ? `, ${options.perPost} per POST /ingest` : ''}${options.loseReplies > 0 ? `, replies to ${options.loseReplies * 100} % of Firestore commits lost` : ''} to ${receivers.map((r) => `${r.plan.destinationId} (${r.plan.policy})`).join(', ')}; Herald's log: ${logFile}`);

    t0 = Date.now();
    const startDay = new Date(t0).toISOString().slice(0, 10);
    const processes = options.rehearsal ? new FunctionProcesses(base, tokens.admin, seededRandom(options.seed + 99)) : undefined;
    const chaos = playChaos(plan, herald, emulators.processGroups.pubsub, say, processes);
    const received = new Map<string, { at: number; n: number }>();
    const keys: string[] = [];
    let unaccepted = 0;
    const ingestAnswers: IngestAnswers = { byStatus: {}, bad5xx: 0, unanswered: 0 };
    const every = Math.max(1, Math.round(options.rate * 10));
    await Promise.all(
      Array.from({ length: Math.ceil(options.events / options.perPost) }, async (_, p) => {
        const first = p * options.perPost;
        await sleep(Math.max(0, (first * 1000) / options.rate - (Date.now() - t0)));
        const events = Array.from({ length: Math.min(options.perPost, options.events - first) }, (_, j) => {
          const i = first + j;
          return { id: `e-${options.seed}-${i}`, i, ...(options.ordered ? { partitionKey: `k-${i % CHAOS_KEYS}` } : {}) };
        });
        const accepted = await publish(base, tokens.ingest, events, t0 + plan.publishMs + PUBLISH_GRACE_MS, ingestAnswers);
        for (const e of events) {
          if (accepted.has(e.id)) keys.push(eventKey({ source: '/chaos', id: e.id }));
          else unaccepted++;
          if ((e.i + 1) % every === 0) say(`published ${e.i + 1}/${options.events} (accepted so far ${keys.length})`);
        }
      }),
    );
    await chaos;
    const publishedAt = Date.now();
    say(`publishing done: ${keys.length} accepted, ${unaccepted} never accepted; waiting for quiet (at most ${options.quietTimeoutSeconds} s)`);

    let ledgers: DestinationLedger[] = [];
    let quietAfterMs: number | undefined;
    let lastNote = 0;
    let lastRead = 0;
    for (;;) {
      // Every record is read (thousands of documents) only when the run may be quiet — each receiver
      // took every event once — or for the note every NOTE_EVERY_MS: read every 2 s, they took a
      // share of the Firestore emulator's CPU from Herald's own operations. A run whose deliveries
      // end DEAD or QUEUED is seen quiet at the next note.
      const mayBeQuiet = receivers.every((r) => r.counts.firstAccepted.length >= keys.length);
      const timedOut = Date.now() - publishedAt > options.quietTimeoutSeconds * 1000;
      if (!mayBeQuiet && !timedOut && Date.now() - lastRead < NOTE_EVERY_MS) {
        await sleep(2000);
        continue;
      }
      lastRead = Date.now();
      const records = await readRecords(emulators.firestoreHost);
      ledgers = receivers.map((r) => ledgerFor(r.plan.destinationId, keys, records, r.counts, webhookIdFor));
      if (isQuiet(ledgers)) {
        quietAfterMs = Date.now() - publishedAt;
        break;
      }
      if (timedOut) break;
      if (Date.now() - lastNote > NOTE_EVERY_MS) {
        lastNote = Date.now();
        const settled = ledgers.reduce((n, l) => n + l.delivered + l.dead + l.queued, 0);
        const each = ledgers.map((l, i) => `${receivers[i]!.plan.behaviour} ${l.delivered + l.dead + l.queued}/${l.scheduled}/${l.lost}`).join(', ');
        say(`settled ${settled}/${keys.length * receivers.length}; scheduled ${ledgers.reduce((n, l) => n + l.scheduled, 0)}; not yet recorded ${ledgers.reduce((n, l) => n + l.lost, 0)} (settled/scheduled/unrecorded: ${each})`);
        await diagnose(emulators.firestoreHost, receivers, keys, records, received, say);
      }
      await sleep(2000);
    }
    say(quietAfterMs === undefined ? 'not quiet before the timeout' : `quiet ${(quietAfterMs / 1000).toFixed(1)} s after publishing ended`);
    if (quietAfterMs === undefined) await diagnose(emulators.firestoreHost, receivers, keys, await readRecords(emulators.firestoreHost), received, say);
    let views: ViewsLedger[] | undefined;
    let usage: UsageLedger | undefined;
    if (quietAfterMs !== undefined && options.readViews) {
      // Counters are flushed a second after their last change (HERALD_RATE_FLUSH_MS): a few flushes' grace.
      await sleep(VIEWS_SETTLE_MS);
      views = await Promise.all(receivers.map((r) => readViews(base, tokens.admin, r)));
      const sum = (pick: (l: DestinationLedger) => number) => ledgers.reduce((n, l) => n + pick(l), 0);
      const answered = (pick: (c: ChaosReceiver['counts']) => ReadonlyMap<string, number>) => receivers.reduce((n, r) => n + [...pick(r.counts).values()].reduce((a, b) => a + b, 0), 0);
      // Accepted events and their deliveries are counted as the reconciler removes their journal batches: the last ones a grace after publishing ended.
      const reconciledBy = publishedAt + options.reconcileAfterSeconds * 1000 + JOURNAL_SETTLE_MS;
      if (Date.now() < reconciledBy) {
        say(`waiting ${((reconciledBy - Date.now()) / 1000).toFixed(0)} s for the reconciler to count the last journal batches in usage`);
        await sleep(reconciledBy - Date.now());
      }
      // A run with many resends journals many batches, and a reconciler round takes a bounded share: the last are removed (and counted) when the journal is empty.
      for (let left = (await readDocuments(emulators.firestoreHost, 'intake', ['acceptedAt'])).length, until = Date.now() + JOURNAL_DRAIN_MS; left > 0; left = (await readDocuments(emulators.firestoreHost, 'intake', ['acceptedAt'])).length) {
        if (Date.now() > until) {
          say(`the intake journal still holds ${left} batches: usage is read without them`);
          break;
        }
        say(`waiting for the reconciler: ${left} intake journal batches left`);
        await sleep(5_000);
      }
      usage = {
        herald: await readUsage(base, tokens.admin, startDay),
        seen: { accepted: keys.length, unansweredTries: ingestAnswers.unanswered, records: sum((l) => l.delivered + l.dead + l.queued + l.scheduled), delivered: sum((l) => l.delivered), answered: answered((c) => c.answered), answered2xx: answered((c) => c.answered2xx) },
      };
    }
    return { seed: options.seed, plan, ledgers, accepted: keys.length, unaccepted, ingestAnswers, quietAfterMs, heraldStarts: herald.starts, instances: options.instances, logFile, startedAt: t0, ...(views ? { views } : {}), ...(usage ? { usage } : {}) };
  } finally {
    await herald.close().catch(() => undefined);
    await Promise.all(receivers.map((r) => r.stop()));
    await emulators.stop();
  }
}

/** How long after the reconciler's grace the usage is read: its rounds (HERALD_RECONCILE_INTERVAL_MS) have removed the last batches. */
const JOURNAL_SETTLE_MS = 10_000;

/** How long past that the usage waits for the journal to be empty (a run with thousands of resent tries journals thousands of batches). */
const JOURNAL_DRAIN_MS = 180_000;

/** How often the wait for quiet says how far it is (and reads every record to say it). */
const NOTE_EVERY_MS = 10_000;

/** How long after quiet the views are read: counters flushed, late duplicates in. */
const VIEWS_SETTLE_MS = 5_000;

/** One destination's whole delivery log (a page of 500 at a time) and its stats, through the admin API. */
async function readViews(base: string, adminToken: string, receiver: ChaosReceiver): Promise<ViewsLedger> {
  const id = receiver.plan.destinationId;
  const get = async (pathAndQuery: string): Promise<unknown> => {
    const res = await fetch(`${base}/admin${pathAndQuery}`, { headers: { authorization: `Bearer ${adminToken}` } });
    if (!res.ok) throw new Error(`GET /admin${pathAndQuery}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  };
  const pages: LogRow[][] = [];
  let cursor: string | undefined;
  do {
    const page = (await get(`/destinations/${id}/deliveries?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)) as { deliveries: LogRow[]; nextCursor?: string };
    pages.push(page.deliveries);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  const stats = (await get(`/stats?window=24h&destination=${id}&counts=false`)) as { series: { attempts: number; successes: number }[] };
  const counted = stats.series.reduce((a, b) => ({ attempts: a.attempts + b.attempts, successes: a.successes + b.successes }), { attempts: 0, successes: 0 });
  const prefix = `${id}.`;
  return viewsLedger(id, pages, receiver.counts, counted, (deliveryId) => webhookIdFor(deliveryId.startsWith(prefix) ? deliveryId.slice(prefix.length) : deliveryId));
}

/** The default account's usage over the run's days (it may cross midnight UTC), summed. */
async function readUsage(base: string, adminToken: string, from: string): Promise<UsageLedger['herald']> {
  const res = await fetch(`${base}/admin/accounts/default/usage?from=${from}&to=${new Date().toISOString().slice(0, 10)}`, { headers: { authorization: `Bearer ${adminToken}` } });
  if (!res.ok) throw new Error(`GET /admin/accounts/default/usage: HTTP ${res.status} ${await res.text()}`);
  const { days } = (await res.json()) as { days: { eventsAccepted: number; deliveries: number; delivered: number; attempts: Record<string, number> }[] };
  const total = { eventsAccepted: 0, deliveries: 0, delivered: 0, attempts: 0, successes: 0 };
  for (const d of days) {
    total.eventsAccepted += d.eventsAccepted;
    total.deliveries += d.deliveries;
    total.delivered += d.delivered;
    total.attempts += Object.values(d.attempts).reduce((a, b) => a + b, 0);
    total.successes += d.attempts.success ?? 0;
  }
  return total;
}

/**
 * Issue 51's quiet time, taken apart: per destination, what its unsettled deliveries wait for,
 * how fast its receiver took events since the last look, and its rate controller.
 */
async function diagnose(firestoreHost: string, receivers: readonly ChaosReceiver[], keys: readonly string[], records: ReadonlyMap<string, RecordState>, received: Map<string, { at: number; n: number }>, say: (line: string) => void): Promise<void> {
  const now = Date.now();
  const docs = await readRateDocs(firestoreHost, PROJECT).catch((e: unknown) => new Map<string, unknown>([['error', (e as Error).message]]));
  for (const r of receivers) {
    const id = r.plan.destinationId;
    const n = r.counts.firstAccepted.length;
    const before = received.get(id);
    const pace = before ? ((n - before.n) * 1000) / Math.max(1, now - before.at) : undefined;
    received.set(id, { at: now, n });
    const doc = docs.get(id);
    say(`  ${id}: received ${n}${pace === undefined ? '' : ` (${pace.toFixed(1)}/s lately)`}; ${describeWaiting(id, keys, records, now)}; ${doc === undefined ? 'no rate document' : describeRateDoc(doc, now)}`);
  }
}

/** The rehearsal's kills go to these functions' processes in turn. */
const KILLED_FUNCTIONS = ['deliver', 'ingest', 'pump'] as const;

/**
 * What ingest answered the producer: a 5xx other than 503 with Retry-After (the answer a
 * draining or restarting instance owes) is a defect; a request no process answered is counted apart.
 */
export interface IngestAnswers {
  byStatus: Record<string, number>;
  /** 5xx answers other than 503 with Retry-After. */
  bad5xx: number;
  /** Requests that got no answer at all (connection refused or reset, timed out). */
  unanswered: number;
}

/** Kills (each followed at once by a restart) and emulator pauses, at the plan's moments. */
async function playChaos(plan: ChaosPlan, herald: HeraldProcess, pubsubGroup: number | undefined, say: (line: string) => void, processes?: FunctionProcesses): Promise<void> {
  const start = Date.now();
  const at = (ms: number) => sleep(Math.max(0, ms - (Date.now() - start)));
  const rolling = (async () => {
    if (!processes || plan.rollingRestartAtMs === undefined) return;
    await at(plan.rollingRestartAtMs);
    say('rolling restart: every function process in turn, SIGTERM');
    await processes.rollingRestart(say);
    say('rolling restart done');
  })();
  const kills = (async () => {
    for (const [n, ms] of plan.kills.entries()) {
      await at(ms);
      if (processes) {
        // The processes whose death matters most, in turn: one mid-delivery, one mid-intake, the retry pump.
        say(`kill ${n + 1}/${plan.kills.length}: ${await processes.killOne(KILLED_FUNCTIONS[n % KILLED_FUNCTIONS.length])}`);
        continue;
      }
      await herald.kill();
      say(`kill ${n + 1}/${plan.kills.length}: Herald's process group SIGKILLed; starting it again`);
      await herald.start();
      say('Herald is serving again');
    }
  })();
  const pauses = plan.pauses.map(async (p) => {
    if (pubsubGroup === undefined) return say('the Pub/Sub emulator was not started by this run: no pause');
    await at(p.atMs);
    process.kill(-pubsubGroup, 'SIGSTOP');
    say(`Pub/Sub emulator paused (SIGSTOP) for ${p.forMs / 1000} s`);
    await sleep(p.forMs);
    process.kill(-pubsubGroup, 'SIGCONT');
    say('Pub/Sub emulator resumed');
  });
  await Promise.all([kills, rolling, ...pauses]);
}

/**
 * POSTs the events until ingest has accepted each (a producer's retries): one alone in binary
 * mode, several as one CloudEvents batch, whose 503 names those it accepted (the rest are sent
 * again, saying so with `Herald-Resend`, as a producer that resends should). Returns the ids
 * accepted before the deadline.
 */
async function publish(base: string, token: string, events: { id: string; i: number; partitionKey?: string }[], deadline: number, answers: IngestAnswers): Promise<Set<string>> {
  const accepted = new Set<string>();
  for (let pause = 200, tries = 0; Date.now() < deadline; pause = Math.min(pause * 2, 2000), tries++) {
    const left = events.filter((e) => !accepted.has(e.id));
    if (left.length === 0) break;
    try {
      const res = await fetch(`${base}/ingest`, { method: 'POST', ...requestOf(token, left, tries > 0), signal: AbortSignal.timeout(15_000) });
      answers.byStatus[res.status] = (answers.byStatus[res.status] ?? 0) + 1;
      if (res.status >= 500 && !(res.status === 503 && res.headers.get('retry-after'))) answers.bad5xx++;
      const body = (await res.json().catch(() => ({}))) as { accepted?: unknown };
      if (res.status === 202) for (const e of left) accepted.add(e.id);
      else if (res.status === 503 && Array.isArray(body.accepted)) for (const id of body.accepted) accepted.add(String(id));
      if (events.every((e) => accepted.has(e.id))) break;
    } catch {
      answers.unanswered++;
      // Herald is down or restarting: try again.
    }
    await sleep(pause);
  }
  return accepted;
}

function requestOf(token: string, events: { id: string; i: number; partitionKey?: string }[], resend: boolean): { headers: Record<string, string>; body: string } {
  const authorization = `Bearer ${token}`;
  const again: Record<string, string> = resend ? { [RESEND_HEADER]: '1' } : {};
  if (events.length === 1) {
    const [e] = events as [(typeof events)[0]];
    return {
      headers: {
        authorization,
        ...again,
        'content-type': 'application/json',
        'ce-specversion': '1.0',
        'ce-id': e.id,
        'ce-source': '/chaos',
        'ce-type': 'com.chaos.tick',
        ...(e.partitionKey !== undefined ? { 'ce-partitionkey': e.partitionKey } : {}),
      },
      body: JSON.stringify({ i: e.i }),
    };
  }
  const batch = events.map((e) => ({ specversion: '1.0', id: e.id, source: '/chaos', type: 'com.chaos.tick', datacontenttype: 'application/json', ...(e.partitionKey !== undefined ? { partitionkey: e.partitionKey } : {}), data: { i: e.i } }));
  return { headers: { authorization, ...again, 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(batch) };
}

const STATUSES = new Set<string>(DELIVERY_STATUSES);

/** A collection's documents, read from the Firestore emulator's REST API, `fields` only. */
async function readDocuments(firestoreHost: string, collection: string, fields: readonly string[]): Promise<{ name: string; fields?: Record<string, FirestoreValue> }[]> {
  const docs: { name: string; fields?: Record<string, FirestoreValue> }[] = [];
  let pageToken: string | undefined;
  do {
    const url = new URL(`http://${firestoreHost}/v1/projects/${PROJECT}/databases/(default)/documents/${collection}`);
    url.searchParams.set('pageSize', '1000');
    for (const field of fields) url.searchParams.append('mask.fieldPaths', field);
    if (pageToken) url.searchParams.set('pageToken', pageToken);
    const res = await fetch(url, { headers: { authorization: 'Bearer owner' } });
    if (!res.ok) throw new Error(`reading ${collection}: HTTP ${res.status} ${await res.text()}`);
    const page = (await res.json()) as { documents?: { name: string; fields?: Record<string, FirestoreValue> }[]; nextPageToken?: string };
    docs.push(...(page.documents ?? []));
    pageToken = page.nextPageToken;
  } while (pageToken);
  return docs;
}

interface FirestoreValue {
  stringValue?: string;
  booleanValue?: boolean;
  bytesValue?: string;
  integerValue?: string;
  arrayValue?: { values?: FirestoreValue[] };
  mapValue?: { fields?: Record<string, FirestoreValue> };
}

/**
 * Every delivery's state (status and times only), as the store shows it
 * (domain/delivery/grouped-outcomes.ts): a document of its own wins; else a DELIVERED first attempt in a group.
 */
async function readRecords(firestoreHost: string): Promise<Map<string, RecordState>> {
  const records = new Map<string, RecordState>();
  for (const group of await readDocuments(firestoreHost, 'delivery-groups', ['ids', 'packed'])) {
    // Members are gzip JSON (`packed`) and `ids` short keys since 2026-11-27; before, `ids` were the delivery ids.
    const packed = group.fields?.packed?.bytesValue;
    const all = packed !== undefined ? unpackGroup(Buffer.from(packed, 'base64')).map((m) => m.id as string | undefined) : (group.fields?.ids?.arrayValue?.values ?? []).map((v) => v.stringValue);
    for (const id of all) if (id) records.set(id, { status: 'DELIVERED' });
  }
  for (const doc of await readDocuments(firestoreHost, 'deliveries', ['status', 'availableAt', 'claimedAt', 'order', 'recoveredAt', 'rateDeferred'])) {
    const status = doc.fields?.status?.stringValue;
    if (!status || !STATUSES.has(status)) continue;
    const availableAt = doc.fields?.availableAt?.stringValue;
    const claimedAt = doc.fields?.claimedAt?.stringValue;
    const order = doc.fields?.order?.mapValue?.fields;
    const place = order?.key?.stringValue !== undefined && order.seq?.integerValue !== undefined ? { order: { key: order.key.stringValue, seq: Number(order.seq.integerValue) } } : {};
    records.set(decodeURIComponent(doc.name.slice(doc.name.lastIndexOf('/') + 1)), {
      status: status as DeliveryStatus,
      ...(availableAt ? { availableAt } : {}),
      ...(claimedAt ? { claimedAt } : {}),
      ...(doc.fields?.recoveredAt?.stringValue ? { recovered: true } : {}),
      ...(doc.fields?.rateDeferred?.booleanValue ? { rateDeferred: true } : {}),
      ...place,
    });
  }
  return records;
}

import { parseHttpEvents, HttpHeaders } from '../../domain/events/cloudevents-http';
import { eventSize, HeraldEvent, ValidationIssue } from '../../domain/events/event';
import { Destination } from '../../domain/destinations/destination';
import { ACCOUNT_EXTENSION, ACCOUNT_ID, eventAccount, withAccount } from '../../domain/access/account';
import { Clock, Logger } from '../../ports/clock';
import { IntakeJournal, IntakeNotRecorded } from './intake-journal';
import { fanOut, LaneDeps, publishBundled, publishJournalled } from '../lanes/lanes';
import { REFERENCE_MIN_EVENTS } from '../../domain/intake/lane-reference';
import { DestinationDirectory } from '../destinations/destination-directory';
import { PublishQuotas, QuotaVerdict } from './publish-quotas';
import { AccountPolicies } from '../access/account-policies';
import { admitOrdered, OrderedDeps, OrderedItem, takesInOrder } from '../ordering/ordered-delivery';
import { OrderedKeyStore } from '../../ports/ordered-keys';
import { newErrorId, QUEUE_REFUSED, STORAGE_BUSY } from '../support/unavailable-causes';
import { TooMany } from '../support/outcome';
import { Metrics } from '../../ports/telemetry';
import { ingestParent, TraceCarrier, withTraceContext } from '../../domain/events/trace-context';
import { inIngestSpan } from '../tracing/spans';
import { DestinationFilters, UNCOUNTED_FILTERS } from '../destinations/destination-filters';
import { OperationalEmitter, receiversOf } from '../../domain/operational/operational-events';
import { meterIngest, UsageMeter } from './ingest-usage';
import { resendOf } from '../../domain/intake/resend';

/**
 * What resending after an unavailable answer costs, said exactly: an event is one delivery per destination (one record,
 * one `webhook-id`), but a resend is a new lane message, sent without a read first, so a
 * destination whose lane had the event already receives it again (docs/delivery-guarantees.md).
 */
/** Pub/Sub or Firestore failing is mostly seconds long (a restart, a blip): come back soon rather than at a producer's own backoff. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;
const RESENT_AGAIN = 'a destination that had one already may receive it again, with the same webhook-id';

export interface IngestDeps extends LaneDeps {
  /** Herald's own record of what it accepted (domain/intake/intake.ts), which the reconciler checks. */
  journal: IntakeJournal;
  /** Which destinations each event goes to. */
  directory: DestinationDirectory;
  clock: Clock;
  log: Logger;
  /** The account of the key that publishes: every event is stamped with it. Absent: the ingest token, and each event's own `heraldaccount` (none: `default`). */
  account?: string;
  maxBodyBytes: number;
  maxEventBytes: number;
  /** Each account's publish rate (absent: no quotas, as in unit tests of other things). */
  quotas?: Pick<PublishQuotas, 'admit' | 'refusedNow'>;
  /** Which accounts exist, cached (absent: not checked, as in unit tests of other things): under the ingest token an event of an account that does not is refused. */
  accounts?: Pick<AccountPolicies, 'missing'>;
  /** Ordered destinations' keys (app/ordering/ordered-delivery.ts); absent: every event is fanned out unordered. */
  keys?: OrderedKeyStore;
  logHead?: OrderedDeps['logHead'];
  /** The destinations' filters, compiled and counted (absent: applied, not counted). */
  filters?: DestinationFilters;
  /** Told of each request refused over an account's quota (`herald.account.quota-exceeded`); absent: nobody is. */
  operational?: OperationalEmitter;
  /** Each account's usage (absent: not counted, as in unit tests of other things). */
  usage?: UsageMeter;
  /**
   * A batched destination's events go to its batch lane named, not carried: their journal batch
   * and places (lanes.ts publishJournalled), published once the journal holds them. Pub/Sub bills
   * the batch lane's bytes twice, and the journal has the events already. Needs a batcher that
   * reads the journal (runtime/delivery-deps.ts); absent: they travel in bundles.
   */
  batchesByReference?: boolean;
}

export type IngestResult =
  | { kind: 'accepted'; body: { accepted: string[] } }
  | { kind: 'invalid' | 'forbidden' | 'too-large'; body: { error: string; issues: ValidationIssue[] } }
  | TooMany<{ error: string; issues: ValidationIssue[] }>
  /** `errorId` names the log line that holds the cause in full; the body holds none of it (no Pub/Sub or Firestore text, no topic path). */
  | { kind: 'unavailable'; retryAfterSeconds: number; body: { error: string; errorId: string; accepted: string[]; failed: { id: string; error: string }[] } };

/**
 * Validates a whole request before publishing any of it (all-or-nothing), then, at once,
 * journals the events (Firestore) and publishes each onto the first-attempt lane of every
 * destination it goes to. An event is accepted once both hold it: the lanes carry it on, the
 * journal lets the reconciler notice if it never reaches a destination. Ingest fans out
 * itself rather than through the events topic and `route`: one hop, one invocation and one
 * publish fewer per event (the events topic and `route` remain for producers that publish to
 * Pub/Sub directly). If Pub/Sub fails part-way the answer names exactly which events were
 * accepted, so a producer can resend only the rest; if the journal fails (a write whose reply
 * was lost and which landed is not a failure: IntakeJournal reads it back), none is. A resent
 * event that was published meanwhile is one delivery (`deliver` records the second send as a
 * duplicate of it), but it is sent again: its unavailable answer says so.
 */
export async function ingest(deps: IngestDeps, headers: HttpHeaders, body: Buffer): Promise<IngestResult> {
  if (body.length > deps.maxBodyBytes) {
    return {
      kind: 'too-large',
      body: { error: `request body is ${body.length} bytes; the limit is ${deps.maxBodyBytes}`, issues: [{ path: 'body', message: `over ${deps.maxBodyBytes} bytes` }] },
    };
  }
  const refused = deps.account !== undefined ? deps.quotas?.refusedNow(deps.account) : undefined;
  if (refused) return metered(deps, undefined, overQuota(deps, refused, 1));
  const started = new Date();
  const resend = resendOf(headers);
  if (!resend.ok) return { kind: 'invalid', body: { error: 'invalid Herald-Resend header', issues: resend.issues } };
  const parsed = parseHttpEvents(headers, body, deps.clock.now());
  return inIngestSpan(ingestParent(headers, parsed.ok ? parsed.value : undefined), started, async (span) => {
    const result = metered(deps, parsed.ok ? parsed.value : undefined, await admit(deps, parsed, span.carrier, resend.resent));
    span.set({ 'herald.result': result.kind, 'herald.events': parsed.ok ? parsed.value.length : 0 });
    if (result.kind !== 'accepted') span.fail(result.body.error);
    return result;
  });
}

/**
 * Events Herald itself publishes into an account (its operational events, app/operational):
 * admitted by the same core as a producer's — journaled, routed, sent on at least once — with
 * `deps.account` stamped on each. Whoever calls leaves `deps.quotas` out: Herald's own notices
 * (a quota refusal's among them) are not refused by the quota they report.
 */
export function admitEvents(deps: IngestDeps, events: HeraldEvent[]): Promise<IngestResult> {
  return admit(deps, { ok: true, value: events, mode: 'batch' }, undefined).then((result) => metered(deps, events, result));
}

/** The answer, counted in its accounts' usage (meterIngest). */
function metered(deps: IngestDeps, events: readonly HeraldEvent[] | undefined, result: IngestResult): IngestResult {
  if (deps.usage) meterIngest(deps.usage, deps.clock.now(), deps.account, events, { kind: result.kind });
  return result;
}

/**
 * A parsed request's events checked, journaled and sent on, each carrying a trace context (its
 * own, else the request's); `resent`: the producer resends them (domain/intake/resend.ts).
 */
async function admit(deps: IngestDeps, parsed: ReturnType<typeof parseHttpEvents>, trace: TraceCarrier | undefined, resent = false): Promise<IngestResult> {
  if (!parsed.ok) {
    return { kind: 'invalid', body: { error: `invalid CloudEvent${parsed.mode === 'batch' ? ' batch' : ''}: ${parsed.issues.length} problem(s)`, issues: parsed.issues } };
  }
  let events = parsed.value;
  const oversized = events
    .map((e, i) => ({ size: eventSize(e), path: parsed.mode === 'batch' ? `[${i}]` : 'body' }))
    .filter((e) => e.size > deps.maxEventBytes);
  if (oversized.length) {
    return {
      kind: 'too-large',
      body: {
        error: `event over the ${deps.maxEventBytes}-byte limit (data plus attributes)`,
        issues: oversized.map((o) => ({ path: o.path, message: `event is ${o.size} bytes; the limit is ${deps.maxEventBytes}` })),
      },
    };
  }
  const paths = events.map((_, i) => (parsed.mode === 'batch' ? `[${i}]` : 'body'));
  const named = events.map((e) => e.attributes[ACCOUNT_EXTENSION]);
  if (deps.account !== undefined) {
    const foreign = named.flatMap((a, i) => (a !== undefined && a !== deps.account ? [{ path: `${paths[i]}.${ACCOUNT_EXTENSION}`, message: `this key publishes for account ${deps.account} only` }] : []));
    if (foreign.length) return { kind: 'forbidden', body: { error: `an event names another account than the key's (${deps.account}); nothing accepted`, issues: foreign } };
  } else {
    const bad = named.flatMap((a, i) => (a !== undefined && !ACCOUNT_ID.test(a) ? [{ path: `${paths[i]}.${ACCOUNT_EXTENSION}`, message: 'heraldaccount must be an account id: 1-63 lowercase letters, digits and hyphens' }] : []));
    if (bad.length) return { kind: 'invalid', body: { error: 'invalid heraldaccount', issues: bad } };
    const unknown = await unknownAccounts(deps, named, paths);
    if (unknown) return unknown;
  }
  if (deps.account !== undefined) events = events.map((e) => withAccount(e, deps.account!));
  // After the size check: the bytes Herald adds are not the producer's to count.
  events = events.map((e) => withTraceContext(e, trace));
  if (deps.quotas) {
    const counts = new Map<string, number>();
    for (const e of events) counts.set(eventAccount(e.attributes), (counts.get(eventAccount(e.attributes)) ?? 0) + 1);
    const verdict = await deps.quotas.admit(counts);
    if (!verdict.ok) return overQuota(deps, verdict, counts.get(verdict.account)!);
  }
  // Events of one type share their array (matched once) unless a filter tells them apart: read-only.
  const filters = deps.filters ?? UNCOUNTED_FILTERS;
  let targets: (readonly Destination[])[];
  try {
    targets = await deps.directory.withAccounts(
      events.map((e) => eventAccount(e.attributes)),
      (matching) => {
        // Events of one type and account go where the first of them goes: matched (and their destinations' secrets opened) once.
        const matched = new Map<string, readonly Destination[]>();
        return events.map((e) => {
          const [type, account] = [e.attributes.type, eventAccount(e.attributes)];
          const key = `${account}\n${type}`;
          let found = matched.get(key);
          if (found === undefined) matched.set(key, (found = matching(type, account)));
          // Herald's operational events only to destinations that name them (domain/operational); then the filters: one that drops the event gets no lane message, record or journal expectation.
          return filters.sift(receiversOf(e, found), e);
        });
      },
    );
  } catch (e) {
    const errorId = newErrorId();
    deps.log.error('the destination registry could not be read (Firestore); no event accepted', { errorId, error: (e as Error).message, eventIds: events.map((ev) => ev.attributes.id) });
    return unavailable('Herald could not read its destinations; resend the events', events, STORAGE_BUSY, errorId);
  }
  const acceptedAt = deps.clock.now();
  // None joins a batch opened before a destination it goes to was created: the reconciler would not expect it there.
  // A batched destination's events are named in the journal, which keeps them until each is recorded there (IntakeBatch.refs).
  const batchedShare = new Map<string, number>();
  for (const ds of targets) for (const d of ds) if (d.batch !== undefined) batchedShare.set(d.id, (batchedShare.get(d.id) ?? 0) + 1);
  const byReference = (d: Destination) => deps.batchesByReference === true && (batchedShare.get(d.id) ?? 0) >= REFERENCE_MIN_EVENTS;
  const journaled = deps.journal.add(events, newestCreated(targets), targets.map((ds) => ds.filter(byReference).map((d) => d.id)));
  const publishedAt = acceptedAt.toISOString();
  const plan = intakePlan(deps, events, targets, publishedAt, journaled.ids);
  const again = resent ? { resent: true as const } : {};
  // Each event's own fan-out, then the work several events share: an ordered destination's placing, a batched one's bundle or reference.
  const shared = [
    ...plan.ordered.map((o) => ({ events: o.events, work: admitOrdered({ ...deps, keys: deps.keys! }, o.destination, o.items) })),
    ...plan.bundled.map((b) => ({
      events: b.events,
      work: byReference(b.destination)
        ? journaled.durable.then(() => publishJournalled(deps, b.destination, referencesOf(b.events, journaled, publishedAt, resent)))
        : publishBundled(deps, b.destination, b.events.map((i) => ({ kind: 'first' as const, destinationId: b.destination.id, event: events[i]!, publishedAt, intake: journaled.ids[i]!, ...again }))),
    })),
  ];
  const [journal, ...settled] = await Promise.allSettled([
    journaled.durable,
    ...events.map((e, i) => fanOut(deps, e, plan.unordered[i]!, { publishedAt: acceptedAt, intake: journaled.ids[i]!, ...again })),
    ...shared.map((s) => s.work),
  ]);
  // Per event, its first failure and where: its lane or a bundle (Pub/Sub), or an ordered destination's placing (Firestore).
  const works = [...plan.ordered.map(() => STORAGE_BUSY), ...plan.bundled.map(() => QUEUE_REFUSED)];
  const results = events.map((_, i) => {
    const own = settled[i]!;
    if (own.status === 'rejected') return { failed: own.reason as Error, cause: QUEUE_REFUSED };
    const j = shared.findIndex((s, k) => s.events.includes(i) && settled[events.length + k]!.status === 'rejected');
    return j < 0 ? undefined : { failed: (settled[events.length + j] as PromiseRejectedResult).reason as Error, cause: works[j]! };
  });
  if (journal.status === 'rejected') {
    const errorId = newErrorId();
    const why = journal.reason instanceof IntakeNotRecorded ? journal.reason : undefined;
    deps.log.error('the intake journal could not record the events (Firestore); none accepted', {
      errorId,
      error: (journal.reason as Error).message,
      // `unknown`: the read of whether the write landed failed too; the events may be in the journal.
      stored: why?.stored ?? 'absent',
      ...(why?.readError !== undefined ? { readError: (why.readError as Error).message } : {}),
      eventIds: events.map((e) => e.attributes.id),
    });
    // Their lanes may have them already (published beside the journal write): a resend is then sent there again.
    return unavailable(`Herald could not record the events durably; resend them (${RESENT_AGAIN})`, events, STORAGE_BUSY, errorId);
  }
  const accepted: string[] = [];
  const failed: { id: string; error: string }[] = [];
  const causes: { id: string; error: string }[] = [];
  results.forEach((r, i) => {
    const id = events[i]!.attributes.id;
    if (r === undefined) {
      accepted.push(id);
      const destinations = targets[i]!.map((d) => d.id);
      const fields = { eventId: id, eventSource: events[i]!.attributes.source, eventType: events[i]!.attributes.type, destinations };
      if (destinations.length) deps.log.debug('event accepted', fields);
      else deps.log.info('event accepted; no destination subscribes to its type', fields);
    } else {
      failed.push({ id, error: r.cause });
      causes.push({ id, error: r.failed.message });
    }
  });
  if (failed.length) {
    const errorId = newErrorId();
    deps.log.error('publishing to the lanes or placing ordered events failed', { errorId, failed: causes, accepted });
    return {
      kind: 'unavailable',
      retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
      body: { error: `Herald could not pass some events on (each failed one says why); resend the failed events (${RESENT_AGAIN})`, errorId, accepted, failed },
    };
  }
  return { kind: 'accepted', body: { accepted } };
}

/**
 * Which destinations take each event on its own (its lane); per ordered destination, the events
 * it takes in order (app/ordering/ordered-delivery.ts); per batched destination, and per destination
 * that takes several of the request's events unordered, the events that go to its lane together
 * (lanes.ts publishBundled): each in the order of the request.
 */
function intakePlan(deps: IngestDeps, events: readonly HeraldEvent[], targets: readonly (readonly Destination[])[], publishedAt: string, intakes: readonly string[]) {
  const ordered = new Map<string, { destination: Destination; items: OrderedItem[]; events: number[] }>();
  const bundled = new Map<string, { destination: Destination; events: number[] }>();
  const perDestination = new Map<string, number>();
  for (const ds of targets) for (const d of ds) perDestination.set(d.id, (perDestination.get(d.id) ?? 0) + 1);
  const unordered = events.map((event, i) =>
    targets[i]!.filter((d) => {
      const inOrder = deps.keys !== undefined && d.batch === undefined && takesInOrder(d, event);
      // A batched destination's events go to its batch lane together; another's, when the request has several for it, in one push.
      if (d.batch !== undefined || (!inOrder && perDestination.get(d.id)! > 1)) {
        const entry = bundled.get(d.id) ?? { destination: d, events: [] };
        entry.events.push(i);
        bundled.set(d.id, entry);
        return false;
      }
      if (!inOrder) return true;
      const entry = ordered.get(d.id) ?? { destination: d, items: [], events: [] };
      entry.items.push({ event, publishedAt, intake: intakes[i]! });
      entry.events.push(i);
      ordered.set(d.id, entry);
      return false;
    }),
  );
  return { unordered, ordered: [...ordered.values()], bundled: [...bundled.values()] };
}

/** Events `indexes` as references to their journal batches: one per batch, their places in the request's order. */
function referencesOf(indexes: readonly number[], journaled: { ids: readonly string[]; places: readonly number[] }, publishedAt: string, resent: boolean): { intake: string; places: number[]; publishedAt: string; resent?: true }[] {
  const byBatch = new Map<string, number[]>();
  for (const i of indexes) byBatch.set(journaled.ids[i]!, [...(byBatch.get(journaled.ids[i]!) ?? []), journaled.places[i]!]);
  return [...byBatch].map(([intake, places]) => ({ intake, places, publishedAt, ...(resent ? { resent: true as const } : {}) }));
}

/** The latest `createdAt` of the destinations the events go to (ISO), undefined when they go nowhere. */
function newestCreated(targets: readonly (readonly Destination[])[]): string | undefined {
  let newest: string | undefined;
  for (const ds of targets) for (const d of ds) if (newest === undefined || d.createdAt > newest) newest = d.createdAt;
  return newest;
}

/**
 * Invalid when events name accounts that do not exist: each would get a quota bucket of its own and
 * catalogue documents nobody owns. Known from the accounts cache the quotas read anyway.
 */
async function unknownAccounts(deps: IngestDeps, named: readonly (string | undefined)[], paths: readonly string[]): Promise<IngestResult | undefined> {
  if (!deps.accounts) return undefined;
  const missing = new Set(await deps.accounts.missing(named.filter((a): a is string => a !== undefined)));
  if (missing.size === 0) return undefined;
  const issues = named.flatMap((a, i) => (a !== undefined && missing.has(a) ? [{ path: `${paths[i]}.${ACCOUNT_EXTENSION}`, message: `no account ${JSON.stringify(a)}` }] : []));
  const list = [...missing].map((a) => JSON.stringify(a)).join(', ');
  return {
    kind: 'invalid',
    body: { error: `events name ${missing.size === 1 ? 'an account that does' : 'accounts that do'} not exist (${list}); nothing accepted: correct heraldaccount, or create the account first (POST /admin/accounts)`, issues },
  };
}

function overQuota(deps: IngestDeps, verdict: Extract<QuotaVerdict, { ok: false }>, n: number): IngestResult {
  const { account, limit, retryAfterSeconds } = verdict;
  // Not awaited: the 429 goes at once; the notice is rate-limited and never throws.
  void deps.operational?.emit({ kind: 'account.quota-exceeded', key: `${account}-${Math.floor(deps.clock.now().getTime() / 1000)}`, data: { account, limit, why: verdict.why, retryAfterSeconds } });
  const error =
    verdict.why === 'too-big'
      ? `this request has ${n} events of account ${account}, more than its quota of ${limit} events per second: split it into requests of at most ${limit}`
      : `account ${account} is over its publish quota of ${limit} events per second; nothing accepted: resend after ${retryAfterSeconds} s (Retry-After), or ask the operator to raise quotas.publishPerSecond`;
  return { kind: 'too-many', retryAfterSeconds, body: { error, issues: [{ path: ACCOUNT_EXTENSION, message: `${account}: over ${limit} events/s` }] } };
}

/** Unavailable, none of the request's events accepted: what to do and a generic cause; the detail is in the log line `errorId` names. */
function unavailable(error: string, events: readonly HeraldEvent[], cause: string, errorId: string): IngestResult {
  return { kind: 'unavailable', retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS, body: { error, errorId, accepted: [], failed: events.map((e) => ({ id: e.attributes.id, error: cause })) } };
}

/** Which refusal reason of the catalogue each refused answer counts under. */
const REFUSED_AS = { invalid: 'invalid', forbidden: 'unauthorized', 'too-large': 'too-large', 'too-many': 'quota', unavailable: 'unavailable' } as const;

/**
 * An answer of ingest into Herald's metrics: the events accepted, and the refused — each event
 * that failed of a request that went part-way, a request refused whole as one (its events were
 * not counted before it was refused).
 */
export function countIngest(metrics: Metrics, result: IngestResult): void {
  if (result.kind === 'accepted' || result.kind === 'unavailable') metrics.add('eventsAccepted', result.body.accepted.length);
  if (result.kind !== 'accepted') metrics.add('eventsRefused', result.kind === 'unavailable' ? Math.max(1, result.body.failed.length) : 1, { reason: REFUSED_AS[result.kind] });
}

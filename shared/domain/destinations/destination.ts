import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AddressRules, checkTargetUrl } from '../access/address-policy';
import { PolicySpec, policySpecSchema, resolvePolicy } from '../retry/policy';
import { DeliveryPolicy, scalePolicy } from '../retry/delivery-policy';
import type { FailingState, Suspension } from '../retry/suspension-record';
import { DESTINATION_ID, splitDestinationId } from '../ids';
import { RATE_LIMITS, RateBounds } from '../rate/rate-doc';
import { BatchSpec, batchSpecSchema } from '../modes/batching';
import { OrderingSpec, orderingSpecSchema } from '../modes/ordering';
import { TOPIC_RESOURCE } from '../access/topic-allow-list';
import { compileFilter, describeFilterProblem, MAX_FILTER_CHARS } from './event-filter';
import { applyReceiverSpec, ReceiverSettings, receiverSpecShape, ReceiverView, receiverView, REPLACED, replacedUntil, ROTATABLE } from './receiver-spec';

export const DEFAULT_POLICY: PolicySpec = 'event-platform';

export const FAILURE_MODES = ['retry', 'queue'] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];

/** `shared`: one of the deployment's shared lanes (topology.ts); `dedicated`: a lane of its own. */
export const LANE_KINDS = ['shared', 'dedicated'] as const;
export type LaneKind = (typeof LANE_KINDS)[number];

export { DESTINATION_ID };
export const SECRET = /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/;

export const destinationSpecSchema = z
  .strictObject(
    {
      url: z.url({ error: 'url must be an absolute URL' }).max(2048, 'url must be at most 2048 characters').optional(),
      topic: z
        .string()
        .regex(TOPIC_RESOURCE, 'topic must look like projects/PROJECT/topics/TOPIC')
        .refine((t) => !/\/topics\/goog/i.test(t), 'a topic name may not start with "goog" (Pub/Sub reserves it)')
        .optional(),
      eventTypes: z
        .array(z.string().min(1, 'an event type must not be empty').max(256), { error: 'eventTypes must be an array of strings' })
        .max(100, 'at most 100 event types')
        .refine((ts) => ts.every((t) => !t.slice(0, -1).includes('*')), 'a wildcard * may only end an event type (e.g. com.example.*)')
        .optional(),
      filter: z
        .string({ error: 'filter must be a CEL expression, as a string' })
        .max(MAX_FILTER_CHARS, `filter must be at most ${MAX_FILTER_CHARS} characters`)
        .superRefine((source, ctx) => {
          const compiled = compileFilter(source);
          if (!compiled.ok) ctx.addIssue({ code: 'custom', message: `invalid CEL filter ${describeFilterProblem(compiled.problem)}` });
        })
        .optional(),
      policy: policySpecSchema.optional(),
      failureMode: z.enum(FAILURE_MODES, { error: 'failureMode must be "retry" or "queue"' }).optional(),
      secret: z.string().regex(SECRET, 'secret must be whsec_ followed by base64 of 24 to 64 random bytes').optional(),
      technicalEmail: z.email({ error: 'technicalEmail must be an email address' }).optional(),
      lane: z.enum(LANE_KINDS, { error: 'lane must be "shared" or "dedicated"' }).optional(),
      rate: z
        .strictObject(
          {
            min: z.number({ error: 'rate.min must be a number' }).min(RATE_LIMITS.minPerSecond, `rate.min must be ${RATE_LIMITS.minPerSecond}–${RATE_LIMITS.maxPerSecond}`).max(RATE_LIMITS.maxPerSecond, `rate.min must be ${RATE_LIMITS.minPerSecond}–${RATE_LIMITS.maxPerSecond}`).optional(),
            max: z.number({ error: 'rate.max must be a number' }).min(RATE_LIMITS.minPerSecond, `rate.max must be ${RATE_LIMITS.minPerSecond}–${RATE_LIMITS.maxPerSecond}`).max(RATE_LIMITS.maxPerSecond, `rate.max must be ${RATE_LIMITS.minPerSecond}–${RATE_LIMITS.maxPerSecond}`).optional(),
          },
          { error: 'rate must be an object {min?, max?} in events per second' },
        )
        .refine((r) => (r.min ?? RATE_LIMITS.minPerSecond) <= (r.max ?? RATE_LIMITS.maxPerSecond), { message: 'rate.min must not exceed rate.max', path: ['min'] })
        .optional(),
      batch: batchSpecSchema.optional(),
      ordering: orderingSpecSchema.optional(),
      ...receiverSpecShape,
    },
    { error: 'the destination spec must be a JSON object' },
  )
  .refine((s) => (s.url === undefined) !== (s.topic === undefined), { message: 'give exactly one of url or topic', path: ['url'] })
  .refine((s) => s.topic === undefined || [s.headers, s.auth, s.tls, s.signature].every((v) => v === undefined || v === null), {
    message: 'headers, auth, tls and signature are for a url destination: a topic is reached with Herald\'s own Pub/Sub identity',
    path: ['topic'],
  })
  .refine((s) => s.batch === undefined || s.ordering === undefined, {
    message: 'a destination takes either batch or ordering, not both: a batch is sent as a unit, an ordered key one event at a time',
    path: ['ordering'],
  });

export type DestinationSpec = z.infer<typeof destinationSpecSchema>;

export type DestinationStatus = 'active' | 'suspended';

/** A destination as stored: the spec with defaults applied, its secret and its state (receiver settings: receiver-spec.ts). */
export interface Destination extends ReceiverSettings {
  id: string;
  url?: string;
  topic?: string;
  eventTypes: string[];
  /** A CEL expression over `ce` and `data` an event of its eventTypes must also pass (domain/destinations/event-filter.ts); absent: every such event. */
  filter?: string;
  /** A preset's name, or a custom policy (validated when the destination was written). */
  policy: PolicySpec;
  /** Absent: the account's failure policy decides (docs/accounts.md; `retry` when the account never set one). */
  failureMode?: FailureMode;
  secret: string;
  /** Secrets a rotation replaced, newest first, each still signing deliveries until its expiresAt. */
  previousSecrets?: PreviousSecret[];
  technicalEmail?: string;
  /** Narrower bounds for the adaptive rate, events per second (within 1–100). */
  rate?: { min?: number; max?: number };
  /** Present only for a destination with a lane of its own; absent: a shared lane. */
  lane?: 'dedicated';
  /** Events sent many to a request (domain/modes/batching.ts); absent: one event per request. */
  batch?: BatchSpec;
  /** Events with the same partitionkey sent one at a time, in the order Herald accepted them (domain/modes/ordering.ts); absent: unordered. */
  ordering?: OrderingSpec;
  status: DestinationStatus;
  /** Why and when it was suspended; present exactly while status is suspended. */
  suspension?: Suspension;
  /** When an operator last reactivated it. */
  reactivatedAt?: string;
  /** The fraction of its suspension threshold it was last announced failing at (`herald.destination.failing`); absent: none. */
  failing?: FailingState;
  createdAt: string;
  updatedAt: string;
}

/** A secret replaced by `rotate-secret`, valid (it signs too) until `expiresAt`. */
export interface PreviousSecret {
  secret: string;
  expiresAt: string;
}

/** What the API shows: never a secret, only until when replaced ones still sign. */
export type DestinationView = Omit<Destination, 'secret' | 'previousSecrets' | 'previousAuth' | keyof ReceiverSettings> &
  ReceiverView & { account: string; previousSecrets?: { expiresAt: string }[]; previousAuth?: { type: string; expiresAt: string }; previousHeaders?: { expiresAt: string }; previousTls?: { expiresAt: string } };

/** Replaced secrets whose grace period has not ended at `now` (expired ones are dropped lazily, here). */
export function unexpiredSecrets(previous: readonly PreviousSecret[] | undefined, now: Date): PreviousSecret[] {
  const at = now.toISOString();
  return (previous ?? []).filter((p) => p.expiresAt > at);
}

export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function applySpec(id: string, spec: DestinationSpec, existing: Destination | undefined, now: Date): Destination {
  const at = now.toISOString();
  const secret = spec.secret ?? existing?.secret ?? generateSecret();
  const dest: Destination = {
    id,
    eventTypes: spec.eventTypes ?? [],
    policy: spec.policy ?? DEFAULT_POLICY,
    ...(spec.failureMode !== undefined ? { failureMode: spec.failureMode } : {}),
    secret,
    status: existing?.status ?? 'active',
    createdAt: existing?.createdAt ?? at,
    updatedAt: at,
  };
  if (spec.filter !== undefined) dest.filter = spec.filter;
  if (spec.url !== undefined) dest.url = spec.url;
  if (spec.topic !== undefined) dest.topic = spec.topic;
  if (spec.technicalEmail !== undefined) dest.technicalEmail = spec.technicalEmail;
  if (spec.rate !== undefined) dest.rate = spec.rate;
  if (spec.lane === 'dedicated') dest.lane = 'dedicated';
  if (spec.batch !== undefined) dest.batch = spec.batch;
  if (spec.ordering !== undefined) dest.ordering = spec.ordering;
  Object.assign(dest, applyReceiverSpec(spec, existing));
  // A PUT that leaves a credential out keeps its rotation's grace; one that gives it replaces it at once.
  for (const key of ROTATABLE) if (existing?.[REPLACED[key]] && spec[key] === undefined) Object.assign(dest, { [REPLACED[key]]: existing[REPLACED[key]] });
  // A PUT with another secret replaces it at once; rotate-secret is the way with a grace period.
  const previous = existing && secret === existing.secret ? unexpiredSecrets(existing.previousSecrets, now) : [];
  if (previous.length) dest.previousSecrets = previous;
  // A new spec does not lift a suspension: only reactivation does.
  if (existing?.suspension) dest.suspension = existing.suspension;
  if (existing?.reactivatedAt) dest.reactivatedAt = existing.reactivatedAt;
  if (existing?.failing) dest.failing = existing.failing;
  return dest;
}

export interface PolicySettings {
  /** The operator's attempt timeout for the presets (HERALD_DELIVERY_TIMEOUT_MS); a custom policy keeps its own. */
  presetTimeoutMs: number;
  /** HERALD_TIME_SCALE. */
  timeScale: number;
}

/** The rules a destination's deliveries follow now. */
export function deliveryPolicyOf(destination: Pick<Destination, 'policy'>, settings: PolicySettings): DeliveryPolicy {
  const policy = resolvePolicy(destination.policy);
  const timed = typeof destination.policy === 'string' ? { ...policy, attemptTimeoutMs: settings.presetTimeoutMs } : policy;
  return scalePolicy(timed, settings.timeScale);
}

/** The bounds the destination's adaptive rate moves within. */
export function rateBoundsOf(destination: Pick<Destination, 'rate'>): RateBounds {
  return { minPerSecond: destination.rate?.min ?? RATE_LIMITS.minPerSecond, maxPerSecond: destination.rate?.max ?? RATE_LIMITS.maxPerSecond };
}

/** `now` given: replaced secrets past their grace period are left out (as delivery leaves them out). */
/** As the API shows it: the account's own id and the account (inside Herald the id names both: ids.ts). */
export function viewOf(dest: Destination, now?: Date): DestinationView {
  const { secret: _secret, previousSecrets, previousAuth, previousHeaders: _h, previousTls: _t, headers, auth, tls, signature, ...rest } = dest;
  const until = replacedUntil(dest, now);
  const graced = {
    ...(previousAuth && until.auth ? { previousAuth: { type: previousAuth.auth.type, expiresAt: until.auth } } : {}),
    ...(until.headers ? { previousHeaders: { expiresAt: until.headers } } : {}),
    ...(until.tls ? { previousTls: { expiresAt: until.tls } } : {}),
  };
  const view = { ...rest, ...receiverView({ headers, auth, tls, signature }), ...graced, ...splitDestinationId(dest.id) };
  const live = now ? unexpiredSecrets(previousSecrets, now) : (previousSecrets ?? []);
  return live.length ? { ...view, previousSecrets: live.map((p) => ({ expiresAt: p.expiresAt })) } : view;
}

/** Local mode only (allowLoopback): lets http://127.0.0.1 / localhost / [::1] receivers register. */
export type UrlRules = AddressRules;

/**
 * A webhook URL judged on its literal form (scheme, credentials, IP literals, metadata and
 * loopback names; shared/domain/access/address-policy.ts). Registration also resolves its host
 * (shared/app/destinations/target-guard.ts), and every attempt checks the addresses it connects to.
 */
export function checkDestinationUrl(raw: string, rules: UrlRules): string | undefined {
  const verdict = checkTargetUrl(raw, rules);
  return verdict.ok ? undefined : verdict.message;
}

/** A setting a replacing spec left out, and what it was (it is back to its default). */
export interface ResetSetting {
  setting: (typeof REPLACED_SETTINGS)[number];
  was: unknown;
}

/** What a spec sets that a destination keeps until the next PUT; the URL or topic, always given, is not among them. */
const REPLACED_SETTINGS = ['eventTypes', 'filter', 'policy', 'failureMode', 'technicalEmail', 'rate', 'lane', 'batch', 'ordering'] as const;

/**
 * The settings `before` had that `spec` (which replaces the whole spec) left out and that
 * changed with it: a PUT's answer names them, so re-adding a destination without a flag it was
 * given before never turns a setting off unsaid.
 */
export function resetSettings(before: Destination | undefined, after: Destination, spec: DestinationSpec): ResetSetting[] {
  if (before === undefined) return [];
  const [was, now, given] = [before as unknown as Record<string, unknown>, after as unknown as Record<string, unknown>, spec as unknown as Record<string, unknown>];
  return REPLACED_SETTINGS.filter((key) => was[key] !== undefined && given[key] === undefined && JSON.stringify(was[key]) !== JSON.stringify(now[key])).map((setting) => ({ setting, was: was[setting] }));
}

import { useState } from 'preact/hooks';
import { BATCH_LIMITS } from '../../../shared/domain/modes/batch-limits';
import { POLICY_PRESET_NAMES } from '../../../shared/domain/retry/policy-preset-names';
import { ApiError, call, get, Issue, issuesByField, seg } from '../api';
import { acct, canWrite, Ctx } from '../ctx';
import { Destination } from '../types';
import { FilterTry } from './filter-try';
import { ActionForm, ErrorBox, Field, href, Loading, Secret, Submit, useAction, useLoad } from '../ui';

/** The form that creates a destination or edits one: the spec PUT /destinations/{id} takes. */

interface FormState {
  id: string;
  target: 'url' | 'topic';
  url: string;
  topic: string;
  eventTypes: string;
  /** A CEL expression over ce and data; '' is none. */
  filter: string;
  policy: string;
  failureMode: string;
  technicalEmail: string;
  rateMin: string;
  rateMax: string;
  dedicated: boolean;
  batched: boolean;
  batchMaxEvents: string;
  batchMaxWaitMs: string;
  batchMaxBytes: string;
  /** Ordered per key, and what a failed event does to its key; '' is unordered. */
  ordering: '' | 'skip' | 'block';
}

const EMPTY: FormState = {
  id: '',
  target: 'url',
  url: '',
  topic: '',
  eventTypes: '',
  filter: '',
  policy: 'event-platform',
  failureMode: '',
  technicalEmail: '',
  rateMin: '',
  rateMax: '',
  dedicated: false,
  batched: false,
  batchMaxEvents: '',
  batchMaxWaitMs: '',
  batchMaxBytes: '',
  ordering: '',
};

function formOf(d: Destination): FormState {
  return {
    id: d.id,
    target: d.topic ? 'topic' : 'url',
    url: d.url ?? '',
    topic: d.topic ?? '',
    eventTypes: d.eventTypes.join(', '),
    filter: d.filter ?? '',
    policy: typeof d.policy === 'string' ? d.policy : JSON.stringify(d.policy),
    failureMode: d.failureMode ?? '',
    technicalEmail: d.technicalEmail ?? '',
    rateMin: d.rate?.min?.toString() ?? '',
    rateMax: d.rate?.max?.toString() ?? '',
    dedicated: d.lane === 'dedicated',
    batched: d.batch !== undefined,
    batchMaxEvents: d.batch?.maxEvents.toString() ?? '',
    batchMaxWaitMs: d.batch?.maxWaitMs.toString() ?? '',
    batchMaxBytes: d.batch?.maxBytes?.toString() ?? '',
    ordering: d.ordering?.onFailure ?? '',
  };
}

const L = BATCH_LIMITS;

/**
 * The batch fields against the bounds the API holds them to, before anything is sent: a number
 * out of bounds is caught at once, under its field, in the API's words (`batch.maxEvents …`).
 * Digits only, as the API takes whole numbers only: "1e3" or "10.5" is not one.
 */
function batchIssues(f: FormState): Issue[] {
  if (!f.batched) return [];
  const fields = [
    { name: 'maxEvents', text: f.batchMaxEvents, min: L.minEvents, max: L.maxEvents, required: true },
    { name: 'maxWaitMs', text: f.batchMaxWaitMs, min: L.minWaitMs, max: L.maxWaitMs, required: true },
    { name: 'maxBytes', text: f.batchMaxBytes, min: L.minBytes, max: L.maxBytes, required: false },
  ];
  const issues: Issue[] = [];
  for (const { name, text, min, max, required } of fields) {
    const path = `batch.${name}`;
    const value = text.trim();
    if (value === '') {
      if (required) issues.push({ path, message: `${path} is needed to send in batches: ${min}–${max}` });
    } else if (!/^\d+$/.test(value)) {
      issues.push({ path, message: `${path} must be a whole number, ${min}–${max}` });
    } else if (Number(value) < min || Number(value) > max) {
      issues.push({ path, message: `${path} must be ${min}–${max}` });
    }
  }
  return issues;
}

/** The spec's `batch` from checked fields; an empty max bytes is left out (the API's default). */
function batchOf(f: FormState): { maxEvents: number; maxWaitMs: number; maxBytes?: number } {
  return { maxEvents: Number(f.batchMaxEvents), maxWaitMs: Number(f.batchMaxWaitMs), ...(f.batchMaxBytes.trim() ? { maxBytes: Number(f.batchMaxBytes) } : {}) };
}

/** The spec PUT takes, from the form (the API validates it and names each bad field). */
function specOf(f: FormState): Record<string, unknown> {
  let policy: unknown = f.policy;
  if (f.policy.trim().startsWith('{')) {
    try {
      policy = JSON.parse(f.policy) as unknown;
    } catch {
      policy = f.policy;
    }
  }
  const num = (s: string) => (s.trim() === '' ? undefined : Number(s));
  const rate = { ...(num(f.rateMin) !== undefined ? { min: num(f.rateMin) } : {}), ...(num(f.rateMax) !== undefined ? { max: num(f.rateMax) } : {}) };
  return {
    ...(f.target === 'url' ? { url: f.url.trim() } : { topic: f.topic.trim() }),
    eventTypes: f.eventTypes.split(/[\s,]+/).filter(Boolean),
    // Left empty, the PUT sends none and the destination stops filtering.
    ...(f.filter.trim() ? { filter: f.filter } : {}),
    policy,
    ...(f.failureMode ? { failureMode: f.failureMode } : {}),
    ...(f.technicalEmail.trim() ? { technicalEmail: f.technicalEmail.trim() } : {}),
    ...(Object.keys(rate).length ? { rate } : {}),
    ...(f.dedicated ? { lane: 'dedicated' } : {}),
    // The PUT replaces the whole spec: unticked, no batch is sent and the destination stops batching.
    ...(f.batched ? { batch: batchOf(f) } : {}),
    // Likewise off: the destination stops ordering. With batches too, the API refuses it under this field.
    ...(f.ordering ? { ordering: { by: 'key', onFailure: f.ordering } } : {}),
  };
}

export function DestinationForm({ ctx, id }: { ctx: Ctx; id?: string }) {
  const editing = id !== undefined;
  const [form, setForm] = useState<FormState>(EMPTY);
  const [loaded, setLoaded] = useState(!editing);
  const [created, setCreated] = useState<Destination>();
  const existing = useLoad(async () => {
    if (!id) return undefined;
    const d = await get<Destination>(`${acct(ctx)}/destinations/${seg(id)}`);
    setForm(formOf(d));
    setLoaded(true);
    return d;
  }, [id]);
  const save = useAction(async () => {
    const problems = batchIssues(form);
    if (problems.length) throw new ApiError(400, 'The batch settings are out of bounds: nothing was sent.', problems);
    return call<Destination>('PUT', `${acct(ctx)}/destinations/${seg(editing ? id : form.id.trim())}`, specOf(form));
  });
  const errors = save.error instanceof ApiError ? issuesByField(save.error.issues) : {};
  const set = (k: keyof FormState) => (e: Event) => {
    const t = e.target as HTMLInputElement;
    setForm({ ...form, [k]: t.type === 'checkbox' ? t.checked : t.value });
  };
  if (!canWrite(ctx)) return <ErrorBox error={new Error('This portal is read only: destinations cannot be changed from it.')} />;
  if (created) {
    return (
      <section aria-labelledby="created-title">
        <h1 id="created-title">Destination {created.id} created</h1>
        {created.secret && <Secret label="Signing secret" value={created.secret} />}
        <p>Give the secret to the receiver so it can verify Herald’s signatures (Standard Webhooks). It is not shown again; rotate it if it is lost.</p>
        <p>
          <a class="button primary" href={href(`/destinations/${created.id}`)}>
            Open {created.id}
          </a>
        </p>
      </section>
    );
  }
  const described = (field: string, fieldId = field) => (errors[field] ? { 'aria-invalid': true, 'aria-describedby': `${fieldId}-error` } : {});
  // The batch fields' hints carry the bounds, so they are read out with the field, errors or not.
  const withHint = (field: string, fieldId: string) => ({ ...(errors[field] ? { 'aria-invalid': true } : {}), 'aria-describedby': [`${fieldId}-hint`, ...(errors[field] ? [`${fieldId}-error`] : [])].join(' ') });
  return (
    <section aria-labelledby="form-title">
      <p class="crumbs">
        <a href={href('/destinations')}>Destinations</a> › {editing ? id : 'new'}
      </p>
      <h1 id="form-title">{editing ? `Edit ${id}` : 'New destination'}</h1>
      {existing.loading && !loaded && <Loading what="the destination" />}
      <ErrorBox error={existing.error} title="Could not load the destination" />
      {loaded && (
        <ActionForm
          class="card form"
          action={save}
          onDone={(d) => {
              if (editing) location.assign(href(`/destinations/${id}`));
              else setCreated(d);
          }}
        >
          {!editing && (
            <Field id="id" label="Id" hint="1–63 lowercase letters, digits and hyphens, e.g. orders." errors={errors.id}>
              <input id="id" value={form.id} onInput={set('id')} autoComplete="off" {...described('id')} />
            </Field>
          )}
          <fieldset class="field">
            <legend>Sends to</legend>
            <label class="radio">
              <input type="radio" name="target" value="url" checked={form.target === 'url'} onChange={() => setForm({ ...form, target: 'url' })} /> a webhook URL
            </label>
            <label class="radio">
              <input type="radio" name="target" value="topic" checked={form.target === 'topic'} onChange={() => setForm({ ...form, target: 'topic' })} /> a Pub/Sub topic
            </label>
          </fieldset>
          {form.target === 'url' ? (
            <Field id="url" label="Webhook URL" hint="https, on a public address." errors={errors.url}>
              <input id="url" type="url" value={form.url} onInput={set('url')} {...described('url')} />
            </Field>
          ) : (
            <Field id="topic" label="Pub/Sub topic" hint="projects/PROJECT/topics/TOPIC" errors={errors.topic}>
              <input id="topic" value={form.topic} onInput={set('topic')} {...described('topic')} />
            </Field>
          )}
          <Field id="eventTypes" label="Event types" hint="Separated by commas; a * may end one: com.example.*" errors={errors.eventTypes}>
            <input id="eventTypes" value={form.eventTypes} onInput={set('eventTypes')} {...described('eventTypes')} />
          </Field>
          <Field
            id="filter"
            label="Filter (optional)"
            hint='A CEL expression over ce (the attributes) and data (the JSON data) an event of those types must also pass, e.g. data.amount > 1000 && ce.siteid == "42". Empty: every event of them.'
            errors={errors.filter}
          >
            <textarea id="filter" rows={2} value={form.filter} onInput={set('filter')} spellcheck={false} {...withHint('filter', 'filter')} />
            <FilterTry ctx={ctx} destinationId={editing ? id : form.id.trim()} filter={form.filter} />
          </Field>
          <Field id="policy" label="Delivery policy" hint="How often and how long Herald retries." errors={errors.policy}>
            {form.policy.startsWith('{') ? (
              <textarea id="policy" rows={4} value={form.policy} onInput={set('policy')} {...described('policy')} />
            ) : (
              <select id="policy" value={form.policy} onChange={set('policy')} {...described('policy')}>
                {POLICY_PRESET_NAMES.map((p) => (
                  <option key={p} value={p}>
                    {p}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field id="failureMode" label="When attempts fail" errors={errors.failureMode}>
            <select id="failureMode" value={form.failureMode} onChange={set('failureMode')}>
              <option value="">follow the account’s failure policy</option>
              <option value="retry">retry</option>
              <option value="queue">queue for redelivery</option>
            </select>
          </Field>
          <Field id="technicalEmail" label="Technical email (optional)" hint="Told when Herald suspends the destination." errors={errors.technicalEmail}>
            <input id="technicalEmail" type="email" value={form.technicalEmail} onInput={set('technicalEmail')} {...described('technicalEmail')} />
          </Field>
          <div class="row">
            <Field id="rateMin" label="Rate min (events/s, optional)" errors={errors['rate.min'] ?? errors.rate}>
              <input id="rateMin" inputMode="decimal" value={form.rateMin} onInput={set('rateMin')} {...described('rate.min', 'rateMin')} />
            </Field>
            <Field id="rateMax" label="Rate max (events/s, optional)" errors={errors['rate.max']}>
              <input id="rateMax" inputMode="decimal" value={form.rateMax} onInput={set('rateMax')} {...described('rate.max', 'rateMax')} />
            </Field>
          </div>
          <label class="check">
            <input type="checkbox" checked={form.dedicated} onChange={set('dedicated')} /> A lane of its own (high volume)
          </label>
          <fieldset class="field">
            <legend>Batches</legend>
            <label class="check">
              <input type="checkbox" checked={form.batched} onChange={set('batched')} aria-describedby="batched-hint" /> Send events in batches
            </label>
            <p class="hint" id="batched-hint">
              Many events to a request, as a JSON array (<code>application/cloudevents-batch+json</code>) signed once. A batch goes when it is full, or when its oldest event has
              waited the max wait. Off: one event per request.
            </p>
            {form.batched && (
              <div class="row">
                <Field id="batchMaxEvents" label="Max events" hint={`${L.minEvents}–${L.maxEvents} events in one request.`} errors={errors['batch.maxEvents']}>
                  <input id="batchMaxEvents" inputMode="numeric" value={form.batchMaxEvents} onInput={set('batchMaxEvents')} {...withHint('batch.maxEvents', 'batchMaxEvents')} />
                </Field>
                <Field id="batchMaxWaitMs" label="Max wait (ms)" hint={`${L.minWaitMs}–${L.maxWaitMs} ms after the oldest event arrived.`} errors={errors['batch.maxWaitMs']}>
                  <input id="batchMaxWaitMs" inputMode="numeric" value={form.batchMaxWaitMs} onInput={set('batchMaxWaitMs')} {...withHint('batch.maxWaitMs', 'batchMaxWaitMs')} />
                </Field>
                <Field id="batchMaxBytes" label="Max bytes (optional)" hint={`${L.minBytes}–${L.maxBytes} bytes of body; empty: ${L.maxBytes}.`} errors={errors['batch.maxBytes']}>
                  <input id="batchMaxBytes" inputMode="numeric" value={form.batchMaxBytes} onInput={set('batchMaxBytes')} {...withHint('batch.maxBytes', 'batchMaxBytes')} />
                </Field>
              </div>
            )}
          </fieldset>
          <Field
            id="ordering"
            label="Ordered per key"
            hint="Events with the same partitionkey go one at a time, in the order Herald accepted them. When one ends dead or queued, its key skips it and goes on, or is held until you release it."
            errors={errors.ordering}
          >
            <select id="ordering" value={form.ordering} onChange={set('ordering')} {...withHint('ordering', 'ordering')}>
              <option value="">off</option>
              <option value="skip">on: a failed event is skipped</option>
              <option value="block">on: a failed event holds its key</option>
            </select>
          </Field>
          <ErrorBox error={save.error} title={editing ? 'The destination was not saved' : 'The destination was not created'} />
          <div class="row">
            <Submit busy={save.busy}>{editing ? 'Save' : 'Create destination'}</Submit>
            <a class="button" href={href(editing ? `/destinations/${id}` : '/destinations')}>
              Cancel
            </a>
          </div>
        </ActionForm>
      )}
    </section>
  );
}

import { useState } from 'preact/hooks';
import { call, get, post, seg } from '../api';
import { Ctx } from '../ctx';
import { Account, KeyRecord } from '../types';
import { ConfirmButton, DataTable, ActionForm, Submit, Empty, ErrorBox, Field, fmtTime, href, Loading, Notice, Secret, useAction, useLoad, onValue, localToIso } from '../ui';
import { issuesByField } from '../api';
import { ApiError } from '../api';
import { PortalAccess } from './portal-access';

const POLICY = 'notification.webhook.failure.policy';
const SCOPES = ['read', 'write', 'publish'] as const;

const fieldErrors = (error: unknown) => (error instanceof ApiError ? issuesByField(error.issues) : {});

export function Accounts({ ctx: _ctx, onOpen }: { ctx: Ctx; onOpen: (id: string, name?: string) => void }) {
  const list = useLoad(() => get<{ accounts: Account[] }>('/accounts?limit=500'), []);
  const [name, setName] = useState('');
  const [id, setId] = useState('');
  const [email, setEmail] = useState('');
  const [created, setCreated] = useState<Account>();
  const create = useAction(() => post<Account>('/accounts', { name, ...(id.trim() ? { id: id.trim() } : {}), ...(email.trim() ? { technicalEmail: email.trim() } : {}) }));
  const errors = fieldErrors(create.error);
  return (
    <section aria-labelledby="accounts-title">
      <h1 id="accounts-title">Accounts</h1>
      <p class="muted">Each customer of your platform is an account, with its own destinations, keys and failure policy.</p>
      <ActionForm
        class="card inline-form" aria-labelledby="new-account-title"
        action={create}
        onDone={(a) => {
            setCreated(a);
            setName('');
            setId('');
            setEmail('');
            list.reload();
        }}
      >
        <h2 id="new-account-title">New account</h2>
        <Field id="account-name" label="Name" errors={errors.name}>
          <input id="account-name" required value={name} onInput={onValue(setName)} />
        </Field>
        <Field id="account-id" label="Id (optional)" hint="Made from the name when left empty." errors={errors.id}>
          <input id="account-id" value={id} onInput={onValue(setId)} />
        </Field>
        <Field id="account-email" label="Technical email (optional)" errors={errors.technicalEmail}>
          <input id="account-email" type="email" value={email} onInput={onValue(setEmail)} />
        </Field>
        <Submit busy={create.busy}>Create account</Submit>
        <ErrorBox error={create.error} title="The account was not created" />
        {created && (
          <Notice>
            Account <a href={href(`/accounts/${created.id}`)}>{created.name}</a> created.
          </Notice>
        )}
      </ActionForm>
      {list.loading && !list.data && <Loading what="accounts" />}
      <ErrorBox error={list.error} title="Could not list the accounts" />
      {list.data && (
        <DataTable label="Accounts" columns={['Account', 'Id', 'Technical email', 'Created', '']}>
              {list.data.accounts.map((a) => (
                <tr key={a.id}>
                  <td>
                    <a href={href(`/accounts/${a.id}`)}>{a.name}</a>
                  </td>
                  <td>
                    <code>{a.id}</code>
                  </td>
                  <td>{a.technicalEmail ?? '—'}</td>
                  <td>{fmtTime(a.createdAt)}</td>
                  <td>
                    <a
                      href={href('/destinations')}
                      onClick={() => onOpen(a.id, a.name)}
                      aria-label={`Open ${a.name}'s destinations`}
                    >
                      Destinations
                    </a>
                  </td>
                </tr>
              ))}
        </DataTable>
      )}
    </section>
  );
}

export function AccountDetail({ ctx: _ctx, id }: { ctx: Ctx; id: string }) {
  const path = `/accounts/${seg(id)}`;
  const account = useLoad(() => get<Account>(path), [id]);
  const settings = useLoad(() => get<Record<string, string>>(`${path}/settings`), [id]);
  const keys = useLoad(() => get<{ keys: KeyRecord[] }>(`${path}/keys`), [id]);
  const [saved, setSaved] = useState<string>();
  const save = useAction((policy: string) => call<Record<string, string>>('PATCH', `${path}/settings`, { [POLICY]: policy }));
  const [keyName, setKeyName] = useState('');
  const [scopes, setScopes] = useState<string[]>([...SCOPES]);
  const [expires, setExpires] = useState('');
  const [newKey, setNewKey] = useState<KeyRecord>();
  const createKey = useAction(() =>
    post<KeyRecord>(`${path}/keys`, { name: keyName, scopes, ...(expires ? { expiresAt: localToIso(expires) } : {}) }),
  );
  const revoke = useAction((keyId: string) => call<void>('DELETE', `${path}/keys/${seg(keyId)}`));
  const keyErrors = fieldErrors(createKey.error);
  const [chosen, setChosen] = useState<string>();
  const policy = chosen ?? settings.data?.[POLICY] ?? 'retry';
  return (
    <section aria-labelledby="account-title">
      <p class="crumbs">
        <a href={href('/accounts')}>Accounts</a> › {id}
      </p>
      <h1 id="account-title">{account.data?.name ?? id}</h1>
      <ErrorBox error={account.error} title="Could not load the account" />
      {account.data?.technicalEmail && <p class="muted">Technical email: {account.data.technicalEmail}</p>}

      <section class="card" aria-labelledby="settings-title">
        <h2 id="settings-title">Failure policy</h2>
        <ErrorBox error={settings.error} title="Could not load the settings" />
        <fieldset>
          <legend>When an attempt fails, for destinations that do not set their own failure mode</legend>
          {[
            ['retry', 'Retry', 'Herald retries on the destination’s policy until it succeeds or the event dies.'],
            ['queue', 'Queue', 'The event is kept QUEUED for retrieval and redelivery (seed 003).'],
          ].map(([value, label, hint]) => (
            <label class="radio" key={value}>
              <input
                type="radio"
                name="failure-policy"
                value={value}
                checked={policy === value}
                disabled={save.busy || settings.loading}
                onChange={() => {
                  setSaved(undefined);
                  setChosen(value);
                  void save.run(value!).then((r) => {
                    if (!r) setChosen(undefined);
                    else {
                      settings.reload();
                      setSaved(`Failure policy is now ${value}. It applies to new failures within about 10 seconds.`);
                    }
                  });
                }}
              />
              <span>
                <strong>{label}</strong> — {hint}
              </span>
            </label>
          ))}
        </fieldset>
        <ErrorBox error={save.error} title="The policy was not saved" />
        {saved && <Notice>{saved}</Notice>}
      </section>

      <section class="card" aria-labelledby="keys-title">
        <h2 id="keys-title">Keys</h2>
        <ActionForm
          class="inline-form"
          action={createKey}
          onDone={(k) => {
              setNewKey(k);
              setKeyName('');
              keys.reload();
          }}
        >
          <Field id="key-name" label="Key name" hint="Who or what uses it, e.g. billing service." errors={keyErrors.name}>
            <input id="key-name" required value={keyName} onInput={onValue(setKeyName)} />
          </Field>
          <fieldset class="field">
            <legend>Scopes</legend>
            {SCOPES.map((s) => (
              <label class="check" key={s}>
                <input type="checkbox" checked={scopes.includes(s)} onChange={(e) => setScopes((e.target as HTMLInputElement).checked ? [...scopes, s] : scopes.filter((x) => x !== s))} /> {s}
              </label>
            ))}
            {keyErrors.scopes?.map((m) => (
              <p class="field-error" key={m}>
                {m}
              </p>
            ))}
          </fieldset>
          <Field id="key-expires" label="Expires (optional)" errors={keyErrors.expiresAt}>
            <input id="key-expires" type="datetime-local" value={expires} onInput={onValue(setExpires)} />
          </Field>
          <Submit busy={createKey.busy}>Create key</Submit>
        </ActionForm>
        <ErrorBox error={createKey.error} title="The key was not created" />
        {newKey?.key && <Secret label={`Key ${newKey.name}`} value={newKey.key} />}
        <ErrorBox error={revoke.error} title="The key was not revoked" />
        {keys.loading && !keys.data && <Loading what="keys" />}
        <ErrorBox error={keys.error} title="Could not list the keys" />
        {keys.data &&
          (keys.data.keys.length === 0 ? (
            <Empty title="This account has no keys yet.">
              <p>Create one above for each service that publishes events or manages this account’s destinations.</p>
            </Empty>
          ) : (
            <DataTable label="Keys" columns={['Name', 'Id', 'Scopes', 'Created', 'Expires', '']}>
                  {keys.data.keys.map((k) => (
                    <tr key={k.id}>
                      <td>{k.name}</td>
                      <td>
                        <code>{k.id}</code>
                      </td>
                      <td>{k.scopes.join(', ')}</td>
                      <td>{fmtTime(k.createdAt)}</td>
                      <td>{k.expiresAt ? fmtTime(k.expiresAt) : 'never'}</td>
                      <td>
                        <ConfirmButton label="Revoke" confirm={`Revoke ${k.name}? It stops working within 5 seconds.`} busy={revoke.busy} onConfirm={() => void revoke.run(k.id).then(() => keys.reload())} />
                      </td>
                    </tr>
                  ))}
            </DataTable>
          ))}
      </section>

      <PortalAccess account={id} name={account.data?.name ?? id} />
    </section>
  );
}

import { X509Certificate, createPrivateKey } from 'node:crypto';
import { z } from 'zod';

/**
 * How a destination's receiver wants to be reached (docs/what-a-destination-receives.md):
 * static headers, an auth scheme, a client certificate, a signature profile. Every credential
 * here is sealed at rest (the stores map them with `mapReceiverSecrets`), never shown by a view
 * and never logged: the attempt detail masks every header this module names as secret.
 */

export const MAX_CUSTOM_HEADERS = 10;
const MAX_HEADER_VALUE = 1024;
const MAX_SECRET = 4096;
const MAX_PEM = 16_384;
/** RFC 9110 token characters: what a header name may be made of. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
/** Visible ASCII, space and tab: no CR, LF or NUL, so a value cannot start another header. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/**
 * Headers Herald owns or the transport sets: hop-by-hop ones, host and length, the CloudEvents
 * `ce-*` and the signature headers, and those receiver auth writes.
 */
const RESERVED_HEADERS = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'host', 'content-length', 'content-type', 'content-encoding', 'user-agent', 'authorization', 'cookie', 'expect',
  'webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-hub-signature', 'x-hub-signature-256', 'traceparent', 'tracestate', 'herald-batch',
]);

export function reservedHeaderProblem(name: string): string | undefined {
  const lower = name.toLowerCase();
  if (lower.startsWith('ce-')) return `header ${name}: ce-* headers carry the event's attributes and are Herald's own`;
  if (RESERVED_HEADERS.has(lower)) return `header ${name} is set by Herald or the transport and cannot be given`;
  return undefined;
}

const headerValue = (what: string, max: number) =>
  z
    .string({ error: `${what} must be a string` })
    .min(1, `${what} must not be empty`)
    .max(max, `${what} must be at most ${max} characters`)
    .regex(HEADER_VALUE, `${what} may hold visible ASCII, spaces and tabs only (no line breaks or control characters)`);

export const headersSchema = z
  .record(z.string(), z.union([z.string(), z.looseObject({ secret: z.unknown() })]), { error: 'headers must be an object {"X-Name": "value" | {"secret": "value"}}' })
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > MAX_CUSTOM_HEADERS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_CUSTOM_HEADERS} headers` });
    const seen = new Set<string>();
    for (const name of names) {
      if (!HEADER_NAME.test(name)) {
        ctx.addIssue({ code: 'custom', path: [name], message: `header name ${JSON.stringify(name.slice(0, 64))} must be 1–64 token characters (letters, digits, - and !#$%&'*+.^_\`|~)` });
        continue;
      }
      const problem = reservedHeaderProblem(name);
      if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
      if (seen.has(name.toLowerCase())) ctx.addIssue({ code: 'custom', path: [name], message: `header ${name} is given twice (names are case-insensitive)` });
      seen.add(name.toLowerCase());
      const raw = headers[name]!;
      const value = typeof raw === 'string' ? raw : raw.secret;
      const checked = headerValue(`header ${name}'s value`, MAX_HEADER_VALUE).safeParse(value);
      if (!checked.success) ctx.addIssue({ code: 'custom', path: [name], message: checked.error.issues[0]!.message });
      if (typeof raw !== 'string' && Object.keys(raw).length !== 1) ctx.addIssue({ code: 'custom', path: [name], message: `header ${name}: a secret value is {"secret": "value"} and nothing else` });
    }
  })
  .transform((h) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, typeof v === 'string' ? v : { secret: v.secret as string }])));

const httpsUrl = (what: string) =>
  z.url({ error: `${what} must be an absolute URL` }).max(2048, `${what} must be at most 2048 characters`);

export const authSchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      type: z.literal('apiKey'),
      header: z
        .string({ error: 'auth.header must be a header name' })
        .regex(HEADER_NAME, 'auth.header must be 1–64 token characters')
        .refine((h) => reservedHeaderProblem(h) === undefined || h.toLowerCase() === 'authorization', { message: 'auth.header may not be a header Herald owns' }),
      value: headerValue('auth.value', MAX_SECRET),
    }),
    z.strictObject({
      type: z.literal('basic'),
      username: headerValue('auth.username', 256).refine((u) => !u.includes(':'), 'auth.username may not contain ":" (RFC 7617)'),
      password: headerValue('auth.password', MAX_SECRET),
    }),
    z.strictObject({
      type: z.literal('oauth2ClientCredentials'),
      tokenUrl: httpsUrl('auth.tokenUrl'),
      clientId: headerValue('auth.clientId', 512),
      clientSecret: headerValue('auth.clientSecret', MAX_SECRET),
      scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]{1,256}$/, 'each scope must be 1–256 visible characters without spaces, " or \\'), { error: 'auth.scopes must be an array of strings' }).max(50, 'at most 50 scopes').optional(),
      audience: z.string().min(1).max(2048, 'auth.audience must be at most 2048 characters').optional(),
    }),
  ],
  { error: 'auth must be {"type": "apiKey" | "basic" | "oauth2ClientCredentials", …}' },
);
export type ReceiverAuth = z.infer<typeof authSchema>;

const pem = (what: string, label: RegExp) =>
  z
    .string({ error: `${what} must be a PEM string` })
    .max(MAX_PEM, `${what} must be at most ${MAX_PEM} characters`)
    .refine((p) => label.test(p), `${what} must be PEM (-----BEGIN …-----)`);

export const tlsSchema = z
  .strictObject(
    {
      clientCertificate: pem('tls.clientCertificate', /-----BEGIN CERTIFICATE-----/),
      clientKey: pem('tls.clientKey', /-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----/),
      ca: pem('tls.ca', /-----BEGIN CERTIFICATE-----/).optional(),
    },
    { error: 'tls must be {"clientCertificate", "clientKey", "ca"?} in PEM' },
  )
  .superRefine((tls, ctx) => {
    try {
      const cert = new X509Certificate(tls.clientCertificate);
      // The pair must match, or every handshake would fail at the receiver with no clue why.
      if (!cert.checkPrivateKey(createPrivateKey(tls.clientKey))) ctx.addIssue({ code: 'custom', path: ['clientKey'], message: 'tls.clientKey is not the key of tls.clientCertificate' });
    } catch {
      ctx.addIssue({ code: 'custom', path: ['clientCertificate'], message: 'tls.clientCertificate and tls.clientKey must be a readable certificate and its unencrypted private key' });
    }
  });
export type ReceiverTls = z.infer<typeof tlsSchema>;

export const SIGNATURE_PROFILES = ['standard-webhooks', 'github'] as const;
export type SignatureProfileName = (typeof SIGNATURE_PROFILES)[number];
const profileName = z.enum(SIGNATURE_PROFILES, { error: 'a signature profile is "standard-webhooks" or "github"' });

export const signatureSchema = z.union(
  [
    profileName,
    z
      .strictObject({ from: profileName, to: profileName, cutoverAt: z.iso.datetime({ offset: true, error: 'signature.cutoverAt must be an ISO 8601 time' }) })
      .refine((s) => s.from !== s.to, { message: 'signature.from and signature.to must differ', path: ['to'] }),
  ],
  { error: 'signature must be "standard-webhooks", "github" or {"from", "to", "cutoverAt"}' },
);
export type SignatureSpec = z.infer<typeof signatureSchema>;

/** The spec's receiver fields; `null` removes a setting, leaving one out keeps it (so secrets need not be sent again). */
export const receiverSpecShape = {
  headers: headersSchema.nullable().optional(),
  auth: authSchema.nullable().optional(),
  tls: tlsSchema.nullable().optional(),
  signature: signatureSchema.nullable().optional(),
};

export type CustomHeaders = Record<string, string | { secret: string }>;

/**
 * The credential settings rotate-auth replaces with a grace period, each with the field its
 * replaced value is kept in, stored beside them and never in a spec: tried again after the
 * receiver refuses the new one, until `expiresAt` (credential-rotation.ts).
 */
export const REPLACED = { auth: 'previousAuth', headers: 'previousHeaders', tls: 'previousTls' } as const;
export type RotatableCredential = keyof typeof REPLACED;
export const ROTATABLE = Object.keys(REPLACED) as RotatableCredential[];
export type Replaced<K extends RotatableCredential> = { [P in K]: NonNullable<ReceiverSettings[P]> } & { expiresAt: string };

/** The receiver settings as a destination keeps them. */
export interface ReceiverSettings {
  headers?: CustomHeaders;
  auth?: ReceiverAuth;
  tls?: ReceiverTls;
  signature?: SignatureSpec;
  previousAuth?: Replaced<'auth'>;
  previousHeaders?: Replaced<'headers'>;
  previousTls?: Replaced<'tls'>;
}

/** Until when each replaced credential is still tried (`now` given: those past it are left out). */
export function replacedUntil(settings: ReceiverSettings, now?: Date): Partial<Record<RotatableCredential, string>> {
  const out: Partial<Record<RotatableCredential, string>> = {};
  for (const key of ROTATABLE) {
    const kept = settings[REPLACED[key]];
    if (kept && (!now || kept.expiresAt > now.toISOString())) out[key] = kept.expiresAt;
  }
  return out;
}

type ReceiverSpec = { [K in keyof ReceiverSettings]?: ReceiverSettings[K] | null };
const RECEIVER_KEYS = ['headers', 'auth', 'tls', 'signature'] as const;

/** The settings after a spec: given replaces, `null` removes, absent keeps what `existing` had. */
export function applyReceiverSpec(spec: ReceiverSpec, existing: ReceiverSettings | undefined): ReceiverSettings {
  const out: Record<string, unknown> = {};
  for (const key of RECEIVER_KEYS) {
    const given = spec[key];
    const value = given === undefined ? existing?.[key] : given;
    if (value !== null && value !== undefined) out[key] = value;
  }
  return out as ReceiverSettings;
}

/** What views show instead: which settings exist, never a credential. */
export interface ReceiverView {
  headers?: Record<string, string | { secret: true }>;
  auth?: { type: 'apiKey'; header: string } | { type: 'basic'; username: string } | { type: 'oauth2ClientCredentials'; tokenUrl: string; clientId: string; scopes?: string[]; audience?: string };
  tls?: { clientCertificate: { subject: string; validTo: string; fingerprint256: string } | 'unreadable'; ca: boolean };
  signature?: SignatureSpec;
}

export function receiverView(settings: ReceiverSettings): ReceiverView {
  const view: ReceiverView = {};
  if (settings.headers) view.headers = Object.fromEntries(Object.entries(settings.headers).map(([k, v]) => [k, typeof v === 'string' ? v : { secret: true as const }]));
  const auth = settings.auth;
  if (auth?.type === 'apiKey') view.auth = { type: 'apiKey', header: auth.header };
  else if (auth?.type === 'basic') view.auth = { type: 'basic', username: auth.username };
  else if (auth) view.auth = { type: auth.type, tokenUrl: auth.tokenUrl, clientId: auth.clientId, ...(auth.scopes ? { scopes: auth.scopes } : {}), ...(auth.audience ? { audience: auth.audience } : {}) };
  if (settings.tls) view.tls = { clientCertificate: certificateSummary(settings.tls.clientCertificate), ca: settings.tls.ca !== undefined };
  if (settings.signature) view.signature = settings.signature;
  return view;
}

function certificateSummary(pemText: string): NonNullable<ReceiverView['tls']>['clientCertificate'] {
  try {
    const cert = new X509Certificate(pemText);
    return { subject: cert.subject, validTo: new Date(cert.validTo).toISOString(), fingerprint256: cert.fingerprint256 };
  } catch {
    return 'unreadable';
  }
}

/**
 * The same settings with every credential passed through `f` (seal, open, collect), each under
 * a path naming it (bound into the sealing context, so a sealed value moved to another field
 * does not open there). The client certificate is sealed too: it names the client.
 */
export function mapReceiverSecrets<T extends ReceiverSettings>(settings: T, f: (value: string, path: string) => string): T {
  const out: T = { ...settings };
  if (settings.headers) out.headers = mapHeaderSecrets(settings.headers, 'headers', f);
  if (settings.auth) out.auth = mapAuthSecret(settings.auth, 'auth', f);
  if (settings.tls) out.tls = mapTlsSecrets(settings.tls, 'tls', f);
  if (settings.previousAuth) out.previousAuth = { ...settings.previousAuth, auth: mapAuthSecret(settings.previousAuth.auth, 'previousAuth', f) };
  if (settings.previousHeaders) out.previousHeaders = { ...settings.previousHeaders, headers: mapHeaderSecrets(settings.previousHeaders.headers, 'previousHeaders', f) };
  if (settings.previousTls) out.previousTls = { ...settings.previousTls, tls: mapTlsSecrets(settings.previousTls.tls, 'previousTls', f) };
  return out;
}

function mapHeaderSecrets(headers: CustomHeaders, at: string, f: (value: string, path: string) => string): CustomHeaders {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, typeof v === 'string' ? v : { secret: f(v.secret, `${at}.${k.toLowerCase()}`) }]));
}

function mapTlsSecrets(tls: ReceiverTls, at: string, f: (value: string, path: string) => string): ReceiverTls {
  return { ...tls, clientCertificate: f(tls.clientCertificate, `${at}.clientCertificate`), clientKey: f(tls.clientKey, `${at}.clientKey`) };
}

function mapAuthSecret(auth: ReceiverAuth, at: string, f: (value: string, path: string) => string): ReceiverAuth {
  if (auth.type === 'apiKey') return { ...auth, value: f(auth.value, `${at}.value`) };
  if (auth.type === 'basic') return { ...auth, password: f(auth.password, `${at}.password`) };
  return { ...auth, clientSecret: f(auth.clientSecret, `${at}.clientSecret`) };
}

/** Every credential in the settings (tests scan answers and logs for them). */
export function receiverSecrets(settings: ReceiverSettings): string[] {
  const found: string[] = [];
  mapReceiverSecrets(settings, (v) => (found.push(v), v));
  return found;
}

import { z } from 'zod';
import { RESEND_HEADER } from '../../shared/domain/intake/resend';
import { eventAttributesSchema } from '../../shared/domain/events/event';
import { customPolicySchema, policySpecSchema } from '../../shared/domain/retry/policy';
import { POLICY_PRESET_NAMES } from '../../shared/domain/retry/policy-preset-names';
import { orderingObjectSchema, orderingSpecSchema } from '../../shared/domain/modes/ordering';

/**
 * The HTTP API as OpenAPI 3.1, generated from the same zod schemas the handlers validate
 * with (zod's own JSON Schema export, JSON Schema 2020-12 as OpenAPI 3.1 uses): a route and its
 * documentation cannot drift apart. The admin function serves it at /openapi.json.
 */

export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

/** What the documentation says of one admin route, beside the code that runs it. */
export interface RouteDoc {
  method: HttpMethod;
  /** OpenAPI path template relative to the admin function: `/destinations/{id}`. */
  path: string;
  summary: string;
  /** The JSON body and the schema its handler parses it with; `examples` are bodies it accepts (a test holds them to both). */
  body?: { schema: z.ZodType; required: boolean; examples: unknown[] };
  /** The query string's schema: each property one parameter. */
  query?: z.ZodObject;
  /** Status → what it means. */
  responses: Partial<Record<number, string>>;
  /** No Authorization header: the body is the credential (a portal link). */
  public?: boolean;
}

/** Every error answer: a message that says what to do, and each problem by field. */
export const errorBodySchema = z.object({
  error: z.string(),
  issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});

type JsonSchema = Record<string, unknown>;

/** A zod schema as the JSON Schema of what it accepts (its input), ready to sit inside an OpenAPI document. */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      // A policy is checked by hand-written code behind z.unknown(): say what it takes.
      if (ctx.zodSchema === policySpecSchema) Object.assign(ctx.jsonSchema, policyJsonSchema());
      // `ordering` reads "key" as the object before its schema sees it: say that it takes both.
      if (ctx.zodSchema === orderingSpecSchema) {
        for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonSchema)[key];
        Object.assign(ctx.jsonSchema, orderingJsonSchema());
      }
    },
  }) as JsonSchema;
  const { $schema: _dialect, ...rest } = json;
  return rest;
}

function orderingJsonSchema(): JsonSchema {
  const { $schema: _dialect, ...object } = z.toJSONSchema(orderingObjectSchema, { io: 'input' }) as JsonSchema;
  return { description: '"key" (the same as {by: "key", onFailure: "skip"}), or the object', anyOf: [{ type: 'string', enum: ['key'] }, object] };
}

function policyJsonSchema(): JsonSchema {
  const custom = z.toJSONSchema(customPolicySchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const { $schema: _dialect, ...rest } = custom;
  return { description: 'a preset name, or a custom policy', anyOf: [{ type: 'string', enum: [...POLICY_PRESET_NAMES] }, rest] };
}

function parametersOf(path: string, query: z.ZodObject | undefined): JsonSchema[] {
  const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  if (!query) return inPath;
  const json = jsonSchemaOf(query) as { properties?: Record<string, JsonSchema>; required?: string[] };
  const inQuery = Object.entries(json.properties ?? {}).map(([name, schema]) => ({ name, in: 'query', required: (json.required ?? []).includes(name), schema }));
  return [...inPath, ...inQuery];
}

const ERROR = { $ref: '#/components/schemas/Error' };

function responsesOf(doc: RouteDoc): JsonSchema {
  const responses: JsonSchema = {};
  const all = doc.public ? doc.responses : { ...doc.responses, 401: 'missing or invalid bearer token' };
  for (const [status, description] of Object.entries(all)) {
    const code = Number(status);
    if (code === 204) responses[status] = { description };
    else responses[status] = { description, content: { 'application/json': { schema: code >= 400 ? ERROR : { type: 'object' } } } };
  }
  return responses;
}

function operationOf(doc: RouteDoc): JsonSchema {
  const parameters = parametersOf(doc.path, doc.query);
  return {
    summary: doc.summary,
    operationId: `${doc.method.toLowerCase()}${doc.path.replace(/\{([^}]+)\}/g, 'By-$1').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    security: doc.public ? [] : [{ adminToken: [] }],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(doc.body
      ? { requestBody: { required: doc.body.required, content: { 'application/json': { schema: jsonSchemaOf(doc.body.schema), examples: Object.fromEntries(doc.body.examples.map((v, i) => [`example${i + 1}`, { value: v }])) } } } }
      : {}),
    responses: responsesOf(doc),
  };
}

/** The ingest function: CloudEvents in structured or batch JSON, or binary mode (any body, `ce-*` headers). */
function ingestOperation(): JsonSchema {
  const event: JsonSchema = { ...jsonSchemaOf(eventAttributesSchema), description: 'a CloudEvent in structured mode: its context attributes, and data or data_base64' };
  const properties = { ...((event.properties as JsonSchema | undefined) ?? {}), data: {}, data_base64: { type: 'string', contentEncoding: 'base64' } };
  const structured = { ...event, properties, additionalProperties: true };
  const header = (name: string, required: boolean) => ({ name, in: 'header', required, schema: { type: 'string' }, description: `binary mode: the event's ${name.slice(3)}` });
  return {
    post: {
      summary: 'Publish CloudEvents (binary, structured or batch mode)',
      operationId: 'postIngest',
      security: [{ ingestToken: [] }],
      parameters: [
        header('ce-id', false),
        header('ce-source', false),
        header('ce-type', false),
        header('ce-specversion', false),
        { name: RESEND_HEADER, in: 'header', required: false, schema: { type: 'string', enum: ['1', 'true'] }, description: "the request resends events whose earlier try went unanswered or was refused (503): their first attempts read each delivery's record first, and a destination that has one already does not receive it again" },
      ],
      requestBody: {
        required: true,
        content: {
          'application/cloudevents+json': { schema: structured },
          'application/cloudevents-batch+json': { schema: { type: 'array', items: structured } },
          '*/*': { schema: { description: 'binary mode: the body is the event data, byte for byte; the ce-* headers carry its attributes' } },
        },
      },
      responses: {
        202: { description: 'accepted', content: { 'application/json': { schema: { type: 'object', properties: { accepted: { type: 'array', items: { type: 'string' } } }, required: ['accepted'] } } } },
        400: { description: 'invalid event(s): every problem named', content: { 'application/json': { schema: ERROR } } },
        401: { description: 'missing or invalid bearer token', content: { 'application/json': { schema: ERROR } } },
        413: { description: 'over the body or event size limit', content: { 'application/json': { schema: ERROR } } },
        503: { description: 'Herald could not take the events now: the answer names those it accepted; resend the rest', content: { 'application/json': { schema: ERROR } } },
      },
    },
  };
}

/** The whole document: the admin routes under /admin, and /ingest. */
export function openApiDocument(routes: readonly RouteDoc[], version: string): JsonSchema {
  const paths: Record<string, JsonSchema> = { '/ingest': ingestOperation() };
  for (const doc of routes) {
    const key = `/admin${doc.path}`;
    paths[key] = { ...(paths[key] ?? {}), [doc.method.toLowerCase()]: operationOf(doc) };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Herald', version, description: 'CloudEvents delivery to webhooks and Pub/Sub topics: the admin API and ingest. Paths are relative to the functions base URL (http://127.0.0.1:8080 locally).' },
    paths,
    components: {
      schemas: { Error: jsonSchemaOf(errorBodySchema) },
      securitySchemes: {
        adminToken: { type: 'http', scheme: 'bearer', description: 'HERALD_ADMIN_TOKEN (the operator), an account key hk_… (its account), or a portal session hps_… (its account, as the link allowed)' },
        ingestToken: { type: 'http', scheme: 'bearer', description: 'HERALD_INGEST_TOKEN' },
      },
    },
  };
}

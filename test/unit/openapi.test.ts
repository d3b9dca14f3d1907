import { spawnSync } from 'node:child_process';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { ROUTES } from '../../functions/admin/routes';
import { openApiDocument } from '../../functions/admin/openapi';

/** /openapi.json: generated from the routes' own zod schemas, valid OpenAPI 3.1, and true to what each route accepts. */

type Operation = { requestBody?: { content: Record<string, { schema: object }> }; parameters?: { name: string; in: string; schema: object }[] };
const doc = openApiDocument(ROUTES, '0.1.0') as { openapi: string; paths: Record<string, Record<string, Operation>> };
const ajv = new Ajv2020({ strict: false, validateFormats: false });

/** The OpenAPI validator is an ES module, which jest's CommonJS cannot load: it runs in a node of its own. */
function validateOpenApi(document: unknown): { valid: boolean; errors?: unknown } {
  const script = `import { Validator } from '@seriousme/openapi-schema-validator';
import { readFileSync } from 'node:fs';
const result = await new Validator().validate(JSON.parse(readFileSync(0, 'utf8')));
process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors }));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: path.resolve(__dirname, '../..'), input: JSON.stringify(document), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`the OpenAPI validator failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { valid: boolean; errors?: unknown };
}

test('is a valid OpenAPI 3.1 document', () => {
  expect(doc.openapi).toBe('3.1.0');
  expect(validateOpenApi(doc)).toEqual({ valid: true });
  // And the validator does catch a broken one.
  expect(validateOpenApi({ ...doc, paths: { '/x': { get: { responses: 'none' } } } }).valid).toBe(false);
});

test('documents every admin route, at a path the route serves, and nothing else', () => {
  for (const route of ROUTES) {
    const operation = doc.paths[`/admin${route.path}`]?.[route.method.toLowerCase()];
    expect({ route: `${route.method} ${route.path}`, documented: operation !== undefined }).toEqual({ route: `${route.method} ${route.path}`, documented: true });
    // The template, filled in, is a path the route's own pattern takes.
    expect(route.pattern.test(route.path.replace(/\{[^}]+\}/g, 'orders'))).toBe(true);
  }
  const documented = Object.entries(doc.paths)
    .filter(([p]) => p.startsWith('/admin/'))
    .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.slice('/admin'.length)}`));
  expect(documented.sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  expect(doc.paths['/ingest']?.post).toBeDefined();
});

test.each(ROUTES.filter((r) => r.body).map((r) => [`${r.method} ${r.path}`, r] as const))('%s: the documented schema takes every body the route takes', (_name, route) => {
  const operation = doc.paths[`/admin${route.path}`]![route.method.toLowerCase()]!;
  const validate = ajv.compile(operation.requestBody!.content['application/json']!.schema);
  expect(route.body!.examples.length).toBeGreaterThan(0);
  for (const example of route.body!.examples) {
    expect({ example, route: route.body!.schema.safeParse(example).success }).toEqual({ example, route: true });
    expect({ example, documented: validate(example), errors: validate.errors ?? null }).toEqual({ example, documented: true, errors: null });
  }
});

test('query parameters are documented with the schemas the routes parse them with', () => {
  const list = doc.paths['/admin/destinations/{id}/deliveries']!.get!;
  const byName = Object.fromEntries((list.parameters ?? []).map((p) => [p.name, p]));
  expect(Object.keys(byName).sort()).toEqual(['cursor', 'eventId', 'from', 'id', 'limit', 'status', 'to', 'type']);
  expect(ajv.validate(byName.limit!.schema, '50')).toBe(true);
  expect(ajv.validate(byName.limit!.schema, 'many')).toBe(false);
  const route = ROUTES.find((r) => r.path === '/destinations/{id}/deliveries')!;
  expect(route.query!.safeParse({ limit: '50', status: 'dead' }).success).toBe(true);
});

test('a portal link exchange needs no bearer token; every other admin route does', () => {
  const operations = doc.paths as Record<string, Record<string, { security?: unknown[]; responses?: Record<string, unknown> }>>;
  expect(operations['/admin/portal/sessions']?.post?.security).toEqual([]);
  for (const route of ROUTES.filter((r) => r.path !== '/portal/sessions')) {
    expect([route.path, operations[`/admin${route.path}`]?.[route.method.toLowerCase()]?.security]).toEqual([route.path, [{ adminToken: [] }]]);
  }
});

test('ordered delivery: the spec documents ordering, and the held-key routes are there with their answers', () => {
  const put = doc.paths['/admin/destinations/{id}']!.put!;
  const validate = ajv.compile(put.requestBody!.content['application/json']!.schema);
  for (const ordering of ['key', { by: 'key' }, { by: 'key', onFailure: 'block' }]) expect(validate({ url: 'https://h.example/x', ordering })).toBe(true);
  for (const ordering of ['time', { by: 'key', onFailure: 'wait' }]) expect(validate({ url: 'https://h.example/x', ordering })).toBe(false);
  const responses = (path: string, method: string) => Object.keys((doc.paths[path]![method] as { responses: object }).responses).sort();
  expect(responses('/admin/destinations/{id}/ordered-keys/blocked', 'get')).toEqual(['200', '400', '401', '404']);
  expect(responses('/admin/accounts/{accountId}/destinations/{id}/ordered-keys/skip', 'post')).toEqual(['200', '400', '401', '404', '409']);
});

test("topic allow-lists: PATCH of an account documents allowedTopics, and PUT of a destination its 403", () => {
  const patch = doc.paths['/admin/accounts/{accountId}']!.patch!;
  const validate = ajv.compile(patch.requestBody!.content['application/json']!.schema);
  expect(validate({ allowedTopics: ['projects/acme-prod/topics/acme-*'] })).toBe(true);
  expect(validate({ allowedTopics: null })).toBe(true);
  expect(validate({ allowedTopics: 'projects/acme-prod/topics/acme-*' })).toBe(false);
  const responses = (doc.paths['/admin/destinations/{id}']!.put as { responses: Record<string, unknown> }).responses;
  expect(Object.keys(responses)).toContain('403');
});

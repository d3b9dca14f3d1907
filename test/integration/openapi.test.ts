import { startTestStack, TestStack } from '../support/stack';

/** The admin function serves its OpenAPI description at /openapi.json, without a token (it holds no data). */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack(`openapi-test-${Date.now().toString(36)}`);
});
afterAll(() => stack.stop({ purge: true }));

test('GET /admin/openapi.json answers the OpenAPI 3.1 document, with no token needed', async () => {
  const res = await fetch(`${stack.url}/admin/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
  expect(doc.openapi).toBe('3.1.0');
  expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/ingest', '/admin/destinations/{id}', '/admin/replays']));
  // Every other admin path still needs the token.
  expect((await fetch(`${stack.url}/admin/destinations`)).status).toBe(401);
});

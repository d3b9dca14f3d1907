import { BATCH_LIMITS as LIMITS_FOR_THE_CONSOLE } from '../../../shared/domain/modes/batch-limits';
import { BATCH_LIMITS, batchBytesOf, batchSpecSchema } from '../../../shared/domain/modes/batching';
import { applySpec, destinationSpecSchema, viewOf } from '../../../shared/domain/destinations/destination';
import { issuesFromZod } from '../../../shared/domain/events/event';

/**
 * A destination's `batch` setting (issue 37) as the API takes it: its bounds, whole numbers
 * only, no unknown field, and a message that names the field and says what it must be.
 */

const URL_SPEC = { url: 'https://hooks.example.com/bulk' };

/** The API's issues for a destination spec (path and message), as a 400 lists them. */
function issues(spec: unknown) {
  const parsed = destinationSpecSchema.safeParse(spec);
  return parsed.success ? [] : issuesFromZod(parsed.error);
}

describe('the bounds', () => {
  test('are the ones the console bundles (one module, imported by both)', () => {
    expect(BATCH_LIMITS).toBe(LIMITS_FOR_THE_CONSOLE);
    expect(BATCH_LIMITS).toEqual({ minEvents: 2, maxEvents: 1000, minWaitMs: 100, maxWaitMs: 60_000, minBytes: 1024, maxBytes: 1_048_576 });
  });

  test.each([
    [{ maxEvents: 2, maxWaitMs: 100 }],
    [{ maxEvents: 1000, maxWaitMs: 60_000 }],
    [{ maxEvents: 50, maxWaitMs: 1000, maxBytes: 1024 }],
    [{ maxEvents: 50, maxWaitMs: 1000, maxBytes: 1_048_576 }],
  ])('each bound itself is accepted: %j', (batch) => {
    expect(destinationSpecSchema.parse({ ...URL_SPEC, batch }).batch).toEqual(batch);
  });

  test.each([
    ['maxEvents', 1, 'batch.maxEvents must be 2–1000'],
    ['maxEvents', 1001, 'batch.maxEvents must be 2–1000'],
    ['maxEvents', 0, 'batch.maxEvents must be 2–1000'],
    ['maxEvents', -3, 'batch.maxEvents must be 2–1000'],
    ['maxWaitMs', 99, 'batch.maxWaitMs must be 100–60000'],
    ['maxWaitMs', 60_001, 'batch.maxWaitMs must be 100–60000'],
    ['maxBytes', 1023, 'batch.maxBytes must be 1024–1048576'],
    ['maxBytes', 1_048_577, 'batch.maxBytes must be 1024–1048576'],
  ])('%s %d: "%s"', (field, value, message) => {
    expect(issues({ ...URL_SPEC, batch: { maxEvents: 10, maxWaitMs: 500, [field]: value } })).toEqual([{ path: `batch.${field}`, message }]);
  });

  test('without maxBytes a batch holds up to the largest body allowed', () => {
    expect(batchBytesOf({ maxEvents: 10, maxWaitMs: 500 })).toBe(BATCH_LIMITS.maxBytes);
    expect(batchBytesOf({ maxEvents: 10, maxWaitMs: 500, maxBytes: 4096 })).toBe(4096);
  });
});

describe('whole numbers only', () => {
  test.each([
    ['maxEvents', 2.5],
    ['maxWaitMs', 100.5],
    ['maxBytes', 2048.25],
  ])('%s %d: "must be a whole number", and nothing else', (field, value) => {
    expect(issues({ ...URL_SPEC, batch: { maxEvents: 10, maxWaitMs: 500, [field]: value } })).toEqual([{ path: `batch.${field}`, message: `batch.${field} must be a whole number` }]);
  });

  test.each([['10'], [null], [true], [Number.NaN], [Number.POSITIVE_INFINITY]])('%p is not a number', (value) => {
    expect(issues({ ...URL_SPEC, batch: { maxEvents: value, maxWaitMs: 500 } })).toEqual([{ path: 'batch.maxEvents', message: 'batch.maxEvents must be a number' }]);
  });

  test('maxEvents and maxWaitMs are both required; each missing one is named', () => {
    expect(issues({ ...URL_SPEC, batch: { maxEvents: 10 } })).toEqual([{ path: 'batch.maxWaitMs', message: 'batch.maxWaitMs must be a number' }]);
    expect(issues({ ...URL_SPEC, batch: { maxBytes: 4096 } })).toEqual([
      { path: 'batch.maxEvents', message: 'batch.maxEvents must be a number' },
      { path: 'batch.maxWaitMs', message: 'batch.maxWaitMs must be a number' },
    ]);
  });
});

describe('strictness', () => {
  test('an unknown field is refused, and the API names it', () => {
    expect(batchSpecSchema.safeParse({ maxEvents: 10, maxWaitMs: 500, maxSize: 4096 }).success).toBe(false);
    expect(issues({ ...URL_SPEC, batch: { maxEvents: 10, maxWaitMs: 500, maxSize: 4096 } })).toEqual([{ path: 'batch', message: 'unknown field maxSize' }]);
    expect(issues({ ...URL_SPEC, batch: { maxEvents: 10, maxWaitMs: 500, size: 1, wait: 2 } })).toEqual([{ path: 'batch', message: 'unknown fields size, wait' }]);
  });

  test.each([[null], [[]], ['100'], [100], [true]])('batch %j is not an object: its shape is said', (batch) => {
    expect(issues({ ...URL_SPEC, batch })).toEqual([{ path: 'batch', message: 'batch must be an object {maxEvents, maxWaitMs, maxBytes?}' }]);
  });

  test('every problem at once, each at its own field', () => {
    expect(issues({ ...URL_SPEC, batch: { maxEvents: 1, maxWaitMs: 1.5, maxBytes: 'big' } })).toEqual([
      { path: 'batch.maxEvents', message: 'batch.maxEvents must be 2–1000' },
      { path: 'batch.maxWaitMs', message: 'batch.maxWaitMs must be a whole number' },
      { path: 'batch.maxBytes', message: 'batch.maxBytes must be a number' },
    ]);
  });
});

describe('on the stored destination', () => {
  const now = new Date('2026-12-01T00:00:00Z');

  test('absent: nothing changes, one event per request (no batch stored or shown)', () => {
    const spec = destinationSpecSchema.parse(URL_SPEC);
    expect(spec).not.toHaveProperty('batch');
    const dest = applySpec('bulk', spec, undefined, now);
    expect(dest).not.toHaveProperty('batch');
    expect(viewOf(dest)).not.toHaveProperty('batch');
  });

  test('present: stored and shown as given; a later spec without it turns batching off', () => {
    const batched = applySpec('bulk', destinationSpecSchema.parse({ ...URL_SPEC, batch: { maxEvents: 100, maxWaitMs: 2000 } }), undefined, now);
    expect(batched.batch).toEqual({ maxEvents: 100, maxWaitMs: 2000 });
    expect(viewOf(batched).batch).toEqual({ maxEvents: 100, maxWaitMs: 2000 });
    const again = applySpec('bulk', destinationSpecSchema.parse(URL_SPEC), batched, now);
    expect(again).not.toHaveProperty('batch');
  });

  test('a Pub/Sub-topic destination may batch too', () => {
    expect(issues({ topic: 'projects/acme-audit/topics/herald-events', batch: { maxEvents: 500, maxWaitMs: 1000 } })).toEqual([]);
  });
});

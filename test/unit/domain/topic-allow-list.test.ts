import { accountPatchSchema, patchAccount } from '../../../shared/domain/access/account';
import { allowedTopicsInForce, allowedTopicsSchema, ownTopicProblem, topicAllowed, topicRefusal } from '../../../shared/domain/access/topic-allow-list';

/** Which topics an account's destinations may publish to, and the topics none may (issue 50). */

const NAMES = { prefix: 'herald' };

describe("Herald's own topics", () => {
  const OWN = ['herald-events', 'herald-dead-letter', 'herald-replay', 'herald-notifications', 'herald-batch', 'herald-batch-wake', 'herald-shard-3', 'herald-retry-shard-0', 'herald-lane-orders', 'herald-lane-acme_orders'];

  test.each(OWN)('%s is refused in every project spelling: its own, another, percent-encoded, another case', (name) => {
    for (const topic of [
      `projects/herald-prod/topics/${name}`,
      `projects/other-project/topics/${name}`,
      `projects/herald-prod/topics/${name.replace('-', '%2D')}`,
      `projects/herald-prod/topics/${name.toUpperCase()}`,
      `projects/herald-prod/topics/${encodeURIComponent(name).replace(/[a-z]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)}`,
    ]) {
      expect([topic, ownTopicProblem(topic, NAMES)]).toEqual([topic, expect.stringContaining("named like one of Herald's own topics")]);
    }
  });

  test('whatever the allow-list says: an entry cannot let one through', () => {
    const everything = ['projects/herald-prod/topics/*', 'projects/herald-prod/topics/herald-events'];
    expect(topicRefusal('projects/herald-prod/topics/herald-events', 'default', everything, NAMES)).toMatchObject({ kind: 'own' });
  });

  test('other names pass, and the prefix in force is the deployment’s', () => {
    expect(ownTopicProblem('projects/herald-prod/topics/audit', NAMES)).toBeUndefined();
    expect(ownTopicProblem('projects/herald-prod/topics/herald-audit', NAMES)).toBeUndefined();
    expect(ownTopicProblem('projects/herald-prod/topics/herald-events', { prefix: 'h2' })).toBeUndefined();
    expect(ownTopicProblem('projects/herald-prod/topics/h2-events', { prefix: 'h2' })).toBeDefined();
  });

  test('a malformed percent sequence is judged as written, not thrown', () => {
    expect(ownTopicProblem('projects/herald-prod/topics/herald-events%E0', NAMES)).toBeUndefined();
  });
});

describe('an allow-list', () => {
  test('takes topics and prefixes; anything else is refused naming the form', () => {
    expect(allowedTopicsSchema.parse(['projects/acme-prod/topics/orders', 'projects/acme-prod/topics/acme-*', 'projects/acme-other/topics/*'])).toHaveLength(3);
    for (const bad of ['projects/acme-prod/topics/or*ders', 'projects/*/topics/x', 'projects/acme-*', '*', 'orders', 'projects/123456/topics/orders', 'projects/acme-prod/topics/ab', 'projects/Acme-prod/topics/orders']) {
      const parsed = allowedTopicsSchema.safeParse([bad]);
      expect([bad, parsed.success]).toEqual([bad, false]);
      expect(parsed.error?.issues[0]?.message).toMatch(/projects\/PROJECT\/topics\/TOPIC.*prefix ending in \*/);
    }
  });

  test('keeps each entry once, at most 100', () => {
    expect(allowedTopicsSchema.parse(['projects/acme-prod/topics/a1x', 'projects/acme-prod/topics/a1x'])).toEqual(['projects/acme-prod/topics/a1x']);
    const many = Array.from({ length: 101 }, (_, i) => `projects/acme-prod/topics/t${i}xx`);
    expect(allowedTopicsSchema.safeParse(many).error?.issues[0]?.message).toMatch(/at most 100/);
  });

  test('a topic matches an equal entry or a prefix of its own project, never another project', () => {
    const list = ['projects/acme-prod/topics/orders', 'projects/acme-prod/topics/acme-*'];
    expect(topicAllowed('projects/acme-prod/topics/orders', list)).toBe(true);
    expect(topicAllowed('projects/acme-prod/topics/acme-billing', list)).toBe(true);
    expect(topicAllowed('projects/acme-prod/topics/orders2', list)).toBe(false);
    expect(topicAllowed('projects/acme-prod/topics/billing', list)).toBe(false);
    expect(topicAllowed('projects/acme-prod2/topics/acme-billing', list)).toBe(false);
    expect(topicAllowed('projects/acme-prod/topics/orders', [])).toBe(false);
  });

  test('a refusal names the topic, the account, its list and what the operator does', () => {
    const refusal = topicRefusal('projects/globex-prod/topics/audit', 'acme', ['projects/acme-prod/topics/acme-*'], NAMES);
    expect(refusal).toEqual({
      kind: 'not-allowed',
      message:
        'topic projects/globex-prod/topics/audit is not among the topics account acme may publish to (its allowedTopics: projects/acme-prod/topics/acme-*); the operator allows it with PATCH /admin/accounts/acme {"allowedTopics": [...]} (herald accounts update acme --allowed-topic projects/globex-prod/topics/audit)',
    });
    expect(topicRefusal('projects/globex-prod/topics/audit', 'acme', [], NAMES)?.message).toContain('(it has no allowedTopics)');
    expect(topicRefusal('projects/acme-prod/topics/acme-audit', 'acme', ['projects/acme-prod/topics/acme-*'], NAMES)).toBeUndefined();
  });

  test("the deployment's list (HERALD_DEFAULT_ACCOUNT_TOPICS) is the default account's alone", () => {
    const deployment = ['projects/ops-prod/topics/audit'];
    expect(allowedTopicsInForce('default', ['projects/ops-prod/topics/x1x'], deployment)).toEqual(['projects/ops-prod/topics/x1x', 'projects/ops-prod/topics/audit']);
    expect(allowedTopicsInForce('default', undefined, deployment)).toEqual(deployment);
    expect(allowedTopicsInForce('acme', undefined, deployment)).toEqual([]);
  });
});

describe("an account's allowedTopics", () => {
  const account = { id: 'acme', name: 'Acme', settings: {}, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' };
  const now = new Date('2026-02-01T00:00:00.000Z');

  test('a PATCH replaces the whole list; null or [] removes it', () => {
    const set = patchAccount(account, accountPatchSchema.parse({ allowedTopics: ['projects/acme-prod/topics/acme-*'] }), now);
    expect(set.allowedTopics).toEqual(['projects/acme-prod/topics/acme-*']);
    const replaced = patchAccount(set, accountPatchSchema.parse({ allowedTopics: ['projects/acme-prod/topics/orders'] }), now);
    expect(replaced.allowedTopics).toEqual(['projects/acme-prod/topics/orders']);
    expect(patchAccount(replaced, accountPatchSchema.parse({ allowedTopics: null }), now)).not.toHaveProperty('allowedTopics');
    expect(patchAccount(replaced, accountPatchSchema.parse({ allowedTopics: [] }), now)).not.toHaveProperty('allowedTopics');
    expect(patchAccount(replaced, accountPatchSchema.parse({ name: 'Acme Inc' }), now).allowedTopics).toEqual(['projects/acme-prod/topics/orders']);
  });

  test('a bad entry is a 400 issue at its place', () => {
    const parsed = accountPatchSchema.safeParse({ allowedTopics: ['projects/acme-prod/topics/orders', 'projects/*'] });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(['allowedTopics', 1]);
  });
});

import type { PubSub } from '@google-cloud/pubsub';
import * as pulumi from '@pulumi/pulumi';
import { FIRESTORE_INCREASING_FIELDS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS, FIRESTORE_UNINDEXED_FIELDS } from '../../../shared/firestore-schema';
import { applyTopology, PubSubLanes } from '../../../shared/adapters/pubsub/topology';
import { ENV_NAMES } from '../../../shared/config-schema';
import { FUNCTION_NAMES, FunctionName, heraldTopology, INTERNAL_FUNCTIONS, laneTopology, PUMP_RUN_SECONDS, subscriptionsHeraldPulls, TOPICS_HERALD_PUBLISHES } from '../../../shared/topology';
import { REQUIRED_APIS } from '../../../infra/components/apis';
import { compositeIndexes, QuerySpec } from '../../../infra/firestore-plan';
import { nodeOptionsFor } from '../../../infra/function-plan';
import { SecretBox } from '../../../shared/domain/access/secret-box';
import { ADMIN_TOKEN, Declared, functionUrl, GENERATED_SECRETS_KEY, mockPulumi, PROJECT, PROJECT_NUMBER, REGION, settled, stackConfig, valueOf, programLoadTimeout } from './mocks';

/**
 * The whole Pulumi program, run once against Pulumi's mocks with a stack that declares one
 * destination; every assertion reads what the program declared.
 */

type Program = typeof import('../../../infra/index');
/** Topics the stack's destinations publish to: one in Herald's project, one in another. */
const DESTINATION_TOPICS = [`projects/${PROJECT}/topics/ops-audit`, 'projects/acme-prod/topics/orders'];
const declared: Declared[] = [];
let program: Program;

beforeAll(async () => {
  await mockPulumi(
    stackConfig({
      'herald:destinations': JSON.stringify({ orders: { url: 'https://hooks.example.com/orders', eventTypes: ['com.example.order.*'] } }),
      'herald:signingSecretReaders': JSON.stringify(['group:hooks@example.com']),
      'herald:functions': JSON.stringify({ deliver: { billing: 'instance' } }),
      'herald:destinationTopics': JSON.stringify(DESTINATION_TOPICS),
      'herald:dedicatedLanes': JSON.stringify(['acme_orders']),
    }),
    declared,
  );
  program = await import('../../../infra/index');
  await settled(declared);
}, programLoadTimeout());

const ofType = (type: string) => declared.filter((r) => r.type === type);
/** Not one of the declared dedicated lanes (`herald-lane-…`): those are not part of the shared topology. */
const notDedicated = (r: Declared) => !String(r.inputs.name).startsWith('herald-lane-');
const FUNCTION = 'gcp:cloudfunctionsv2/function:Function';
const SUBSCRIPTION = 'gcp:pubsub/subscription:Subscription';
const prefix = 'herald';
const topology = heraldTopology({ prefix });
const DELIVERY_TIMEOUT_MS = 5_000;
const email = (role: string) => `${prefix}-${role}@${PROJECT}.iam.gserviceaccount.com`;
const PUSH_SA = email('pusher');
const SCHEDULER_SA = email('scheduler');
const RUNTIME_SA = email('runtime');
const PUBSUB_AGENT = `serviceAccount:service-${PROJECT_NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com`;

function functionNamed(name: string): Declared {
  const fn = ofType(FUNCTION).find((f) => f.inputs.name === name);
  if (fn === undefined) throw new Error(`no function ${name} declared`);
  return fn;
}
const serviceConfig = (fn: Declared) => fn.inputs.serviceConfig as Record<string, unknown>;
const buildConfig = (fn: Declared) => fn.inputs.buildConfig as Record<string, unknown>;

/** Who may invoke each function: the run.invoker members declared on its service. */
function invokersOf(name: string): string[] {
  return ofType('gcp:cloudrunv2/serviceIamMember:ServiceIamMember')
    .filter((m) => m.inputs.name === name && m.inputs.role === 'roles/run.invoker')
    .map((m) => String(m.inputs.member))
    .sort();
}

describe('topology: the program declares what local mode applies', () => {
  /** A subscription reduced to what both sides set, in one shape. */
  interface Shape {
    name: string;
    topic: string;
    ackDeadlineSeconds: number;
    retentionSeconds: number;
    pushTo?: string;
    oidc?: boolean;
    retry?: [number, number];
    deadLetter?: [string, number];
  }
  const lastSegment = (url: string) => new URL(url).pathname.split('/').pop()!;

  /** What local mode's Pub/Sub code asks of a client: the whole topology, or what `apply` does with the client. */
  async function appliedLocally(apply: (pubsub: PubSub) => Promise<void> = (pubsub) => applyTopology(pubsub, topology, { endpointFor: (fn) => functionUrl(fn), serviceAccountEmail: PUSH_SA })): Promise<{ topics: Record<string, number | undefined>; subscriptions: Shape[] }> {
    const topics: Record<string, number | undefined> = {};
    const subscriptions: Shape[] = [];
    type Metadata = {
      ackDeadlineSeconds: number;
      messageRetentionDuration: { seconds: number };
      pushConfig?: { pushEndpoint: string; oidcToken?: { serviceAccountEmail: string } };
      retryPolicy?: { minimumBackoff: { seconds: number }; maximumBackoff: { seconds: number } };
      deadLetterPolicy?: { deadLetterTopic: string; maxDeliveryAttempts: number };
    };
    // A Pub/Sub client that records what shared/adapters/pubsub/topology.ts asks of it.
    const fake = {
      projectId: PROJECT,
      createTopic: async (t: { name: string; messageRetentionDuration?: { seconds: number } }) => void (topics[t.name] = t.messageRetentionDuration?.seconds),
      topic: (topic: string) => ({
        createSubscription: async (name: string, m: Metadata) =>
          void subscriptions.push({
            name,
            topic,
            ackDeadlineSeconds: m.ackDeadlineSeconds,
            retentionSeconds: m.messageRetentionDuration.seconds,
            ...(m.pushConfig ? { pushTo: lastSegment(m.pushConfig.pushEndpoint), oidc: m.pushConfig.oidcToken?.serviceAccountEmail === PUSH_SA } : {}),
            ...(m.retryPolicy ? { retry: [m.retryPolicy.minimumBackoff.seconds, m.retryPolicy.maximumBackoff.seconds] as [number, number] } : {}),
            ...(m.deadLetterPolicy ? { deadLetter: [m.deadLetterPolicy.deadLetterTopic, m.deadLetterPolicy.maxDeliveryAttempts] as [string, number] } : {}),
          }),
      }),
    };
    await apply(fake as unknown as PubSub);
    return { topics, subscriptions };
  }

  /** What the program declared (the shared topology unless `which` says otherwise), in the same shape. */
  function declaredByPulumi(which: (r: Declared) => boolean = notDedicated): { topics: Record<string, number | undefined>; subscriptions: Shape[] } {
    const topics = Object.fromEntries(
      ofType('gcp:pubsub/topic:Topic')
        .filter(which)
        .map((t) => [String(t.inputs.name), t.inputs.messageRetentionDuration === undefined ? undefined : seconds(t.inputs.messageRetentionDuration)]),
    );
    const subscriptions = ofType(SUBSCRIPTION).filter(which).map((s): Shape => {
      const i = s.inputs as {
        name: string;
        topic: string;
        ackDeadlineSeconds: number;
        messageRetentionDuration: string;
        pushConfig?: { pushEndpoint: string; oidcToken?: { serviceAccountEmail: string } };
        retryPolicy?: { minimumBackoff: string; maximumBackoff: string };
        deadLetterPolicy?: { deadLetterTopic: string; maxDeliveryAttempts: number };
      };
      return {
        name: i.name,
        topic: i.topic,
        ackDeadlineSeconds: i.ackDeadlineSeconds,
        retentionSeconds: seconds(i.messageRetentionDuration),
        ...(i.pushConfig ? { pushTo: lastSegment(i.pushConfig.pushEndpoint), oidc: i.pushConfig.oidcToken?.serviceAccountEmail === PUSH_SA } : {}),
        ...(i.retryPolicy ? { retry: [seconds(i.retryPolicy.minimumBackoff), seconds(i.retryPolicy.maximumBackoff)] as [number, number] } : {}),
        ...(i.deadLetterPolicy ? { deadLetter: [i.deadLetterPolicy.deadLetterTopic, i.deadLetterPolicy.maxDeliveryAttempts] as [string, number] } : {}),
      };
    });
    return { topics, subscriptions };
  }

  const byName = (a: Shape, b: Shape) => a.name.localeCompare(b.name);

  test('a declared dedicated lane is what Herald itself makes locally: its topic, and its push subscription with every setting', async () => {
    const made = await appliedLocally((pubsub) => new PubSubLanes(pubsub, { prefix }, { endpointFor: (fn) => functionUrl(fn), serviceAccountEmail: PUSH_SA }).ensureLane('acme_orders'));
    const lane = laneTopology('acme_orders', { prefix });
    const stack = declaredByPulumi((r) => !notDedicated(r));
    expect(Object.keys(stack.topics)).toEqual([lane.topic.name]);
    expect(Object.keys(made.topics)).toEqual([lane.topic.name]);
    expect(stack.subscriptions).toEqual(made.subscriptions);
    expect(stack.subscriptions).toEqual([expect.objectContaining({ name: lane.subscription.name, pushTo: 'deliver', oidc: true, deadLetter: [expect.stringContaining('herald-dead-letter'), 100] })]);
  });

  test('topics and subscriptions, with every setting, equal the ones local mode creates from heraldTopology()', async () => {
    const local = await appliedLocally();
    const stack = declaredByPulumi();
    expect(stack.topics).toEqual(local.topics);
    expect(stack.subscriptions.sort(byName)).toEqual(local.subscriptions.sort(byName));
    // And both are the whole topology, not an agreeing subset.
    expect(Object.keys(stack.topics).sort()).toEqual([...Object.values(topology.topics), ...topology.laneTopics].map((t) => t.name).sort());
    expect(topology.laneTopics.length).toBeGreaterThan(0);
    expect(stack.subscriptions.map((s) => s.name).sort()).toEqual(topology.subscriptions.map((s) => s.name).sort());
  });

  test("the batch lane is a pull subscription (the batcher's), with the dead-letter backstop", () => {
    const declared = declaredByPulumi().subscriptions.find((s) => s.name === 'herald-batch-gather');
    expect(declared).toMatchObject({ topic: expect.stringContaining('herald-batch'), deadLetter: [expect.stringContaining('herald-dead-letter'), 100] });
    expect(declared).not.toHaveProperty('pushTo');
  });

  test('every push subscription pushes to its function URL with an OIDC token of the push identity, a retry policy and a dead-letter policy (a batcher wake-up none)', () => {
    const pushes = ofType(SUBSCRIPTION).filter((s) => s.inputs.pushConfig !== undefined && notDedicated(s));
    expect(pushes.map((s) => s.inputs.name).sort()).toEqual(topology.subscriptions.filter((s) => s.pushTo).map((s) => s.name).sort());
    for (const s of pushes) {
      const spec = topology.subscriptions.find((t) => t.name === s.inputs.name)!;
      const push = s.inputs.pushConfig as { pushEndpoint: string; oidcToken?: { serviceAccountEmail: string; audience: string } };
      expect(push.pushEndpoint).toBe(functionUrl(spec.pushTo!));
      expect(push.oidcToken).toEqual({ serviceAccountEmail: PUSH_SA, audience: push.pushEndpoint });
      expect(s.inputs.retryPolicy).toEqual({ minimumBackoff: expect.stringMatching(/^\d+s$/), maximumBackoff: expect.stringMatching(/^\d+s$/) });
      // A wake-up that could not start a run is worth nothing once the next scheduled run came: it is not dead-lettered, it expires.
      if (spec.topic === topology.topics.batchWake.name) expect([s.inputs.deadLetterPolicy, s.inputs.messageRetentionDuration]).toEqual([undefined, '600s']);
      else expect(s.inputs.deadLetterPolicy).toEqual({ deadLetterTopic: `projects/${PROJECT}/topics/${topology.topics.deadLetter.name}`, maxDeliveryAttempts: expect.any(Number) });
    }
    // The wake-up goes to the pump, which the push identity may now invoke beside the scheduler's.
    const wake = pushes.find((s) => topology.subscriptions.find((t) => t.name === s.inputs.name)?.topic === topology.topics.batchWake.name);
    expect((wake?.inputs.pushConfig as { pushEndpoint: string } | undefined)?.pushEndpoint).toBe(functionUrl('pump'));
  });

  test('no subscription expires from inactivity', () => {
    for (const s of ofType(SUBSCRIPTION)) expect(s.inputs.expirationPolicy).toEqual({ ttl: '' });
  });

  test("Pub/Sub's service agent may move dead letters and mint the push tokens", () => {
    const agentRoles = declared.filter((r) => r.inputs.member === PUBSUB_AGENT).map((r) => [r.type, r.inputs.role, r.inputs.topic ?? r.inputs.subscription ?? r.inputs.serviceAccountId ?? r.inputs.project]);
    expect(agentRoles).toContainEqual(['gcp:pubsub/topicIAMMember:TopicIAMMember', 'roles/pubsub.publisher', topology.topics.deadLetter.name]);
    for (const s of topology.subscriptions.filter((t) => t.deadLetter)) {
      expect(agentRoles).toContainEqual(['gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember', 'roles/pubsub.subscriber', s.name]);
    }
    expect(agentRoles).toContainEqual(['gcp:serviceaccount/iAMMember:IAMMember', 'roles/iam.serviceAccountTokenCreator', `projects/${PROJECT}/serviceAccounts/${PUSH_SA}`]);
    expect(agentRoles).toContainEqual(['gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember', 'roles/pubsub.subscriber', laneTopology('acme_orders', { prefix }).subscription.name]);
    // Lanes an older Herald made at runtime still dead-letter: that grant stays project-wide.
    expect(agentRoles).toContainEqual(['gcp:projects/iAMMember:IAMMember', 'roles/pubsub.subscriber', PROJECT]);
  });
});

describe('functions', () => {
  test('one Cloud Function (2nd gen) per function name, Node 20, entry point = its name, from the uploaded archive', () => {
    expect(ofType(FUNCTION).map((f) => f.inputs.name).sort()).toEqual([...FUNCTION_NAMES].sort());
    const object = ofType('gcp:storage/bucketObject:BucketObject');
    expect(object).toHaveLength(1);
    expect(object[0]!.inputs.name).toMatch(/^herald-[0-9a-f]{20}\.zip$/);
    for (const name of FUNCTION_NAMES) {
      const build = buildConfig(functionNamed(name));
      expect(build).toMatchObject({ runtime: 'nodejs20', entryPoint: name, environmentVariables: { GOOGLE_NODE_RUN_SCRIPTS: '' } });
      expect(build.source).toEqual({ storageSource: { bucket: expect.any(String), object: object[0]!.inputs.name } });
      expect(build.serviceAccount).toBe(`projects/${PROJECT}/serviceAccounts/${email('builder')}`);
      expect(functionNamed(name).inputs).toMatchObject({ project: PROJECT, location: REGION });
    }
  });

  test('every function runs as the dedicated runtime identity, never the default compute account', () => {
    for (const fn of ofType(FUNCTION)) {
      expect(serviceConfig(fn).serviceAccountEmail).toBe(RUNTIME_SA);
      expect(String(serviceConfig(fn).serviceAccountEmail)).not.toMatch(/-compute@developer\.gserviceaccount\.com$/);
    }
  });

  test('environment: Herald variables only, and lanes made at runtime push to the deployed deliver URL as the push identity', () => {
    const known = new Set(Object.values(ENV_NAMES));
    for (const fn of ofType(FUNCTION)) {
      const env = serviceConfig(fn).environmentVariables as Record<string, string>;
      for (const key of Object.keys(env)) if (key !== 'NODE_OPTIONS') expect(known).toContain(key);
      // V8's heap sized to the instance's memory, not to the host's (infra/function-plan.ts nodeOptionsFor).
      expect(env.NODE_OPTIONS).toBe(nodeOptionsFor(serviceConfig(fn).availableMemory as string));
      expect(env).toMatchObject({
        [ENV_NAMES.projectId]: PROJECT,
        [ENV_NAMES.topicPrefix]: prefix,
        [ENV_NAMES.pushServiceAccount]: PUSH_SA,
        [ENV_NAMES.schedulerServiceAccount]: SCHEDULER_SA,
        // Private functions: Cloud Run checks the token's signature, Herald its claims (shared/app/access/push-auth.ts).
        [ENV_NAMES.pushAuth]: 'oidc-behind-iam',
        [ENV_NAMES.allowLoopback]: 'false',
      });
      expect(env[ENV_NAMES.pushToken]).toBeUndefined();
      const lane = laneTopology('orders', { prefix }).subscription;
      expect(`${env[ENV_NAMES.pushBaseUrl]}/${lane.pushTo}`).toBe(functionUrl(lane.pushTo!));
    }
  });

  const HERALD_SECRET_IDS = [`${prefix}-admin-token`, `${prefix}-ingest-token`, `${prefix}-secrets-key`];
  const heraldSecrets = () => ofType('gcp:secretmanager/secret:Secret').filter((s) => HERALD_SECRET_IDS.includes(String(s.inputs.secretId)));

  test('the tokens and the secrets key come from Secret Manager, by version; only the runtime identity may read them', () => {
    const secrets = heraldSecrets();
    expect(secrets.map((s) => s.inputs.secretId).sort()).toEqual(HERALD_SECRET_IDS);
    const versions = ofType('gcp:secretmanager/secretVersion:SecretVersion').filter((v) => !v.name.startsWith('herald-signing'));
    expect(versions.map((v) => v.name).sort()).toEqual(['herald-adminToken', 'herald-ingestToken', 'herald-secretsKey']);
    // Sent to the engine as secrets: encrypted in the state, masked in the logs.
    expect(versions.map((v) => v.inputs.secretData)).toContainEqual({ [pulumi.runtime.specialSigKey]: pulumi.runtime.specialSecretSig, value: ADMIN_TOKEN });
    const readers = ofType('gcp:secretmanager/secretIamMember:SecretIamMember').filter((r) => !r.name.startsWith('herald-signing'));
    expect(readers.map((r) => [r.inputs.secretId, r.inputs.role, r.inputs.member]).sort()).toEqual(
      secrets.map((s) => [s.inputs.secretId, 'roles/secretmanager.secretAccessor', `serviceAccount:${RUNTIME_SA}`]).sort(),
    );
    for (const fn of ofType(FUNCTION)) {
      const secretEnv = serviceConfig(fn).secretEnvironmentVariables as { key: string; secret: string; version: string }[];
      expect(secretEnv.map((e) => [e.key, e.secret, e.version]).sort()).toEqual([
        [ENV_NAMES.adminToken, `${prefix}-admin-token`, '1'],
        [ENV_NAMES.ingestToken, `${prefix}-ingest-token`, '1'],
        [ENV_NAMES.secretsKey, `${prefix}-secrets-key`, '1'],
      ]);
      expect(JSON.stringify(serviceConfig(fn).environmentVariables)).not.toContain(ADMIN_TOKEN);
    }
  });

  test('HERALD_SECRETS_KEY: generated once (random bytes, kept secret in the state) into Secret Manager, a secret variable of every function and never a plain one', async () => {
    const generated = ofType('random:index/randomBytes:RandomBytes');
    expect(generated.map((r) => [r.name, r.inputs.length])).toEqual([['herald-secrets-key', 32]]);
    const [secret] = ofType('gcp:secretmanager/secret:Secret').filter((s) => s.inputs.secretId === `${prefix}-secrets-key`);
    expect(secret?.inputs).toMatchObject({ project: PROJECT, replication: { auto: {} } });
    // The generated key is what the secret holds, as a secret; it decodes to a 32-byte key the functions accept.
    const version = ofType('gcp:secretmanager/secretVersion:SecretVersion').find((v) => v.name === 'herald-secretsKey');
    expect(version?.inputs.secretData).toEqual({ [pulumi.runtime.specialSigKey]: pulumi.runtime.specialSecretSig, value: GENERATED_SECRETS_KEY });
    // A replaced key is disabled, not destroyed: what it encrypted can still be recovered.
    expect(version?.inputs.deletionPolicy).toBe('DISABLE');
    expect(() => SecretBox.fromConfig(GENERATED_SECRETS_KEY)).not.toThrow();
    // Exactly one principal may read it: the functions' runtime identity; nobody is granted more on it.
    const grants = ofType('gcp:secretmanager/secretIamMember:SecretIamMember').filter((r) => r.inputs.secretId === `${prefix}-secrets-key`);
    expect(grants.map((g) => [g.inputs.role, g.inputs.member])).toEqual([['roles/secretmanager.secretAccessor', `serviceAccount:${RUNTIME_SA}`]]);
    expect(ofType('gcp:secretmanager/secretIamBinding:SecretIamBinding')).toEqual([]);
    expect(ofType('gcp:secretmanager/secretIamPolicy:SecretIamPolicy')).toEqual([]);
    expect(FUNCTION_NAMES.map((name) => serviceConfig(functionNamed(name)).serviceAccountEmail)).toEqual(FUNCTION_NAMES.map(() => RUNTIME_SA));
    for (const fn of ofType(FUNCTION)) {
      const config = serviceConfig(fn);
      const secretEnv = config.secretEnvironmentVariables as { key: string; projectId: string; secret: string; version: string }[];
      expect(secretEnv.filter((e) => e.key === ENV_NAMES.secretsKey)).toEqual([{ key: ENV_NAMES.secretsKey, projectId: PROJECT, secret: `${prefix}-secrets-key`, version: '1' }]);
      const plain = (config.environmentVariables ?? {}) as Record<string, string>;
      expect(Object.keys(plain)).not.toContain(ENV_NAMES.secretsKey);
      expect(JSON.stringify(plain)).not.toContain(GENERATED_SECRETS_KEY);
    }
    // Never a stack output either.
    expect(JSON.stringify(await valueOf(pulumi.output(Object.fromEntries(Object.entries(program).filter(([k]) => k !== 'destinationSecrets')))))).not.toContain(GENERATED_SECRETS_KEY);
  });

  test("every function's timeout exceeds the delivery timeout, and a scheduled one's its run", () => {
    for (const fn of ofType(FUNCTION)) expect(Number(serviceConfig(fn).timeoutSeconds) * 1000).toBeGreaterThan(DELIVERY_TIMEOUT_MS);
    for (const schedule of topology.schedules) {
      expect(Number(serviceConfig(functionNamed(schedule.function)).timeoutSeconds)).toBeGreaterThan(schedule.runSeconds ?? 0);
    }
    expect(Number(serviceConfig(functionNamed('pump')).timeoutSeconds)).toBeGreaterThan(PUMP_RUN_SECONDS);
  });

  test('a pushed function finishes within its push ack deadline', () => {
    const pushes = [...topology.subscriptions, laneTopology('x', { prefix }).subscription].filter((s) => s.pushTo);
    for (const s of pushes) expect(Number(serviceConfig(functionNamed(s.pushTo!)).timeoutSeconds)).toBeLessThanOrEqual(s.ackDeadlineSeconds);
  });

  test('sizes: concurrency, instances and memory are set on every function', () => {
    for (const fn of ofType(FUNCTION)) {
      expect(serviceConfig(fn)).toMatchObject({
        maxInstanceRequestConcurrency: expect.any(Number),
        maxInstanceCount: expect.any(Number),
        minInstanceCount: expect.any(Number),
        availableMemory: expect.stringMatching(/^\d+(Mi|Gi)$/),
      });
    }
  });
});

describe('billing mode', () => {
  test('each function carries its mode; an instance-based one gets the command that applies it, which the Functions API cannot', () => {
    for (const name of FUNCTION_NAMES) {
      expect(functionNamed(name).inputs.labels).toEqual({ 'herald-billing': name === 'deliver' ? 'instance' : 'request' });
    }
    const billing = program.billing;
    expect(billing.deliver).toEqual({ mode: 'instance', apply: `gcloud run services update deliver --project=${PROJECT} --region=${REGION} --no-cpu-throttling` });
    expect(billing.ingest).toEqual({ mode: 'request' });
  });
});

describe('who may call what', () => {
  test('no internal function is public; each is invocable only by the identities that call it', () => {
    for (const name of INTERNAL_FUNCTIONS) {
      expect(invokersOf(name)).not.toContain('allUsers');
      expect(invokersOf(name)).not.toContain('allAuthenticatedUsers');
      const pushed = [...topology.subscriptions, laneTopology('x', { prefix }).subscription].some((s) => s.pushTo === name);
      const scheduled = topology.schedules.some((s) => s.function === name);
      expect(invokersOf(name)).toEqual([...(pushed ? [`serviceAccount:${PUSH_SA}`] : []), ...(scheduled ? [`serviceAccount:${SCHEDULER_SA}`] : [])].sort());
    }
    // deliver is pushed only by lanes, which Herald creates at runtime: the grant must exist all the same.
    expect(invokersOf('deliver')).toEqual([`serviceAccount:${PUSH_SA}`]);
  });

  test('ingest and admin are public at the network level: they check bearer tokens themselves', () => {
    const userFacing = FUNCTION_NAMES.filter((n) => !INTERNAL_FUNCTIONS.includes(n));
    expect(userFacing).toEqual(expect.arrayContaining(['ingest', 'admin']));
    for (const name of userFacing) expect(invokersOf(name)).toEqual(['allUsers']);
  });

  test('no primitive role (owner, editor, viewer) is granted anywhere', () => {
    const grants = declared.filter((r) => typeof r.inputs.role === 'string' || Array.isArray(r.inputs.bindings));
    expect(grants.length).toBeGreaterThan(10);
    for (const g of grants) expect(String(g.inputs.role)).not.toMatch(/^roles\/(owner|editor|viewer)$/);
    expect(JSON.stringify(declared.map((r) => r.inputs))).not.toMatch(/roles\/(owner|editor|viewer)"/);
  });

  test('the runtime identity has no project-wide Pub/Sub role, and acts as no other identity', () => {
    const projectGrants = ofType('gcp:projects/iAMMember:IAMMember').filter((r) => r.inputs.member === `serviceAccount:${RUNTIME_SA}`).map((r) => r.inputs.role);
    expect(projectGrants).toEqual(['roles/datastore.user', 'roles/monitoring.metricWriter', 'roles/cloudtrace.agent', 'roles/monitoring.viewer']);
    // Nobody holds a project-wide Pub/Sub role but Google's own agent, which forwards dead letters.
    const pubsubProjectRoles = ofType('gcp:projects/iAMMember:IAMMember').filter((r) => String(r.inputs.role).startsWith('roles/pubsub.'));
    expect(pubsubProjectRoles.map((r) => [r.inputs.role, r.inputs.member])).toEqual([['roles/pubsub.subscriber', PUBSUB_AGENT]]);
    expect(ofType('gcp:projects/iAMCustomRole:IAMCustomRole')).toEqual([]);
    // It creates no push subscription, so it need not attach the push identity to one.
    expect(declared.filter((r) => r.inputs.member === `serviceAccount:${RUNTIME_SA}` && r.inputs.role === 'roles/iam.serviceAccountUser')).toEqual([]);
  });

  test("the runtime identity publishes to Herald's own topics (never events), pulls the subscriptions it reads, and publishes to the stack's destination topics", () => {
    const grants = (type: string, role: string, key: string) =>
      ofType(type)
        .filter((r) => r.inputs.member === `serviceAccount:${RUNTIME_SA}` && r.inputs.role === role)
        .map((r) => `${String(r.inputs.project)}/${String(r.inputs[key])}`)
        .sort();
    const own = [...TOPICS_HERALD_PUBLISHES.map((k) => topology.topics[k].name), ...topology.laneTopics.map((t) => t.name), laneTopology('acme_orders', { prefix }).topic.name];
    const destinations = DESTINATION_TOPICS.map((t) => `${t.split('/')[1]}/${t.split('/')[3]}`);
    expect(grants('gcp:pubsub/topicIAMMember:TopicIAMMember', 'roles/pubsub.publisher', 'topic')).toEqual([...own.map((t) => `${PROJECT}/${t}`), ...destinations].sort());
    expect(own).not.toContain(topology.topics.events.name);
    expect(grants('gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember', 'roles/pubsub.subscriber', 'subscription')).toEqual(subscriptionsHeraldPulls({ prefix }).map((n) => `${PROJECT}/${n}`).sort());
    // Nothing else in Pub/Sub: no editor, admin or viewer on any topic or subscription.
    const other = declared.filter((r) => r.inputs.member === `serviceAccount:${RUNTIME_SA}` && String(r.inputs.role).startsWith('roles/pubsub.') && !['roles/pubsub.publisher', 'roles/pubsub.subscriber'].includes(String(r.inputs.role)));
    expect(other).toEqual([]);
  });

  test('the functions are told the program makes the dedicated lanes, and which', () => {
    for (const fn of ofType(FUNCTION)) {
      expect(serviceConfig(fn).environmentVariables).toMatchObject({ [ENV_NAMES.laneProvisioning]: 'declared', [ENV_NAMES.dedicatedLanes]: 'acme_orders' });
    }
  });
});

test('a Cloud Scheduler job per schedule of the topology, calling its function URL with the scheduler identity', () => {
  const jobs = ofType('gcp:cloudscheduler/job:Job');
  expect(jobs.map((j) => j.inputs.name).sort()).toEqual(topology.schedules.map((s) => s.name).sort());
  for (const schedule of topology.schedules) {
    const job = jobs.find((j) => j.inputs.name === schedule.name)!;
    const target = job.inputs.httpTarget as { uri: string; httpMethod: string; oidcToken: { serviceAccountEmail: string; audience: string } };
    const uri = new URL(target.uri);
    expect(`${uri.origin}${uri.pathname}`).toBe(functionUrl(schedule.function));
    expect(target.httpMethod).toBe('POST');
    expect(target.oidcToken).toEqual({ serviceAccountEmail: SCHEDULER_SA, audience: functionUrl(schedule.function) });
    expect(job.inputs).toMatchObject({ schedule: schedule.cron, timeZone: 'Etc/UTC', region: REGION });
    expect(seconds(job.inputs.attemptDeadline)).toBeGreaterThanOrEqual(schedule.runSeconds ?? 0);
    if (schedule.runSeconds !== undefined) expect(uri.searchParams.get('runSeconds')).toBe(String(schedule.runSeconds));
  }
});

test('no usage export unless herald:usageExport is set: no BigQuery API, dataset, table, grant or export job, and no setting', () => {
  expect(declared.filter((r) => r.type.startsWith('gcp:bigquery/') || r.type === 'herald:usage:UsageExport')).toEqual([]);
  expect(ofType('gcp:projects/service:Service').map((s) => s.inputs.service)).not.toContain('bigquery.googleapis.com');
  expect(ofType('gcp:projects/iAMMember:IAMMember').map((r) => String(r.inputs.role)).filter((role) => role.startsWith('roles/bigquery'))).toEqual([]);
  expect(ofType('gcp:cloudscheduler/job:Job').map((j) => String(j.inputs.name))).not.toContain(`${prefix}-usage-export`);
  for (const fn of ofType(FUNCTION)) expect(Object.keys(serviceConfig(fn).environmentVariables as object)).not.toContain(ENV_NAMES.usageExportTable);
  expect(program.usageExportTable).toBeUndefined();
});

describe('Firestore', () => {
  test('a native-mode (default) database', () => {
    expect(ofType('gcp:firestore/database:Database').map((d) => d.inputs)).toEqual([expect.objectContaining({ name: '(default)', type: 'FIRESTORE_NATIVE', project: PROJECT })]);
  });

  test('composite indexes cover exactly the queries in FIRESTORE_QUERIES that need one', () => {
    const declaredIndexes = ofType('gcp:firestore/index:Index').map((i) => ({
      collection: i.inputs.collection,
      fields: (i.inputs.fields as { fieldPath: string; order?: string; arrayConfig?: string }[]).map((f) => `${f.fieldPath} ${f.order ?? f.arrayConfig}`),
    }));
    const queries: QuerySpec[] = Object.values(FIRESTORE_QUERIES);
    // The equality fields ascending, then the ordered field in the query's direction.
    const indexFields = (q: QuerySpec) => [...(q.contains !== undefined ? [`${q.contains} CONTAINS`] : []), ...q.equality.map((f) => `${f} ASCENDING`), `${q.orderBy} ${q.direction === 'desc' ? 'DESCENDING' : 'ASCENDING'}`];
    const needed = queries.filter((q) => new Set([...q.equality, q.orderBy]).size > 1 || q.contains !== undefined).map((q) => ({ collection: q.collection, fields: indexFields(q) }));
    const key = (i: { collection: unknown; fields: string[] }) => `${String(i.collection)}:${i.fields.join(',')}`;
    expect(declaredIndexes.map(key).sort()).toEqual([...new Set(needed.map(key))].sort());
    expect(declaredIndexes).toHaveLength(compositeIndexes(FIRESTORE_QUERIES).length);
    // The accounts issue's query: one account's replays, newest first.
    expect(declaredIndexes).toContainEqual({ collection: 'replays', fields: ['request.account ASCENDING', 'createdAt DESCENDING'] });
    // The scheduled purge: deleted accounts still pending, oldest first (the rest it deletes by document-id ranges: no index).
    expect(declaredIndexes).toContainEqual({ collection: 'account-tombstones', fields: ['purge ASCENDING', 'deletedAt ASCENDING'] });
    // Shared counter documents (issue 33): a destination's, by array-contains, in bucket order.
    expect(declaredIndexes).toContainEqual({ collection: 'rates-shared', fields: ['destinations CONTAINS', 'bucketStart ASCENDING'] });
  });

  test('a TTL policy on every expiry field the stores write, rates.expireAt among them', () => {
    const ttl = ofType('gcp:firestore/field:Field').filter((f) => f.inputs.ttlConfig !== undefined);
    expect(ttl.map((f) => `${String(f.inputs.collection)}.${String(f.inputs.field)}`).sort()).toEqual(Object.values(FIRESTORE_TTL_FIELDS).map((t) => `${t.collection}.${t.field}`).sort());
    expect(ttl.map((f) => `${String(f.inputs.collection)}.${String(f.inputs.field)}`)).toContain('rates.expireAt');
    // Delivery records are kept HERALD_DELIVERY_RETENTION_DAYS after they settle (domain/delivery/delivery-retention.ts).
    const deliveries = ttl.find((f) => f.inputs.collection === 'deliveries');
    expect(deliveries?.inputs).toMatchObject({ project: PROJECT, database: '(default)', field: 'expireAt', ttlConfig: {}, indexConfig: {} });
    // A group of DELIVERED first attempts expires with its members.
    expect(ttl.find((f) => f.inputs.collection === 'delivery-groups')?.inputs).toMatchObject({ field: 'expireAt', ttlConfig: {} });
  });

  test("a group's members are exempt from automatic indexing; its log query has its composite index", () => {
    const unindexed = ofType('gcp:firestore/field:Field').filter((f) => f.inputs.ttlConfig === undefined);
    expect(unindexed.map((f) => f.inputs)).toContainEqual(expect.objectContaining({ project: PROJECT, database: '(default)', collection: 'delivery-groups', field: 'members', indexConfig: {} }));
    const indexes = ofType('gcp:firestore/index:Index').map((i) => ({ collection: i.inputs.collection, fields: (i.inputs.fields as { fieldPath: string; order?: string; arrayConfig?: string }[]).map((f) => `${f.fieldPath} ${f.arrayConfig ?? f.order}`) }));
    expect(indexes).toContainEqual({ collection: 'delivery-groups', fields: ['destinations CONTAINS', 'oldest DESCENDING'] });
  });

  test('every field whose values only grow is exempt from the automatic indexes (no hotspot at the end of one), and nothing else is', () => {
    const exempt = ofType('gcp:firestore/field:Field').filter((f) => f.inputs.ttlConfig === undefined);
    const planned = exempt.map((f) => `${String(f.inputs.collection)}.${String(f.inputs.field)}`).sort();
    const wanted = [...FIRESTORE_UNINDEXED_FIELDS, ...FIRESTORE_INCREASING_FIELDS].map((f) => `${f.collection}.${f.field}`).sort();
    expect(planned).toEqual(wanted);
    for (const f of exempt) expect(f.inputs).toMatchObject({ project: PROJECT, database: '(default)', indexConfig: {} });
    // The delivery record's, named in the issue, among them.
    expect(planned).toEqual(expect.arrayContaining(['deliveries.intake', 'deliveries.publishedAt', 'deliveries.availableAt']));
  });
});

test('the APIs Herald uses are enabled, and left on at teardown', () => {
  const services = ofType('gcp:projects/service:Service');
  expect(services.map((s) => s.inputs.service).sort()).toEqual([...REQUIRED_APIS].sort());
  for (const api of ['cloudfunctions', 'run', 'cloudbuild', 'artifactregistry', 'pubsub', 'firestore', 'cloudscheduler', 'secretmanager']) {
    expect(REQUIRED_APIS).toContain(`${api}.googleapis.com`);
  }
  for (const s of services) expect(s.inputs.disableOnDestroy).toBe(false);
});

test('a destination declared in the stack is registered through the admin function', () => {
  const destinations = declared.filter((r) => r.type.startsWith('pulumi-nodejs:dynamic'));
  expect(destinations).toHaveLength(1);
  expect(destinations[0]!.inputs).toMatchObject({ adminUrl: functionUrl('admin'), destinationId: 'orders', spec: { url: 'https://hooks.example.com/orders' } });
});

test("a declared destination's signing secret is kept in Secret Manager, readable by the members the stack names", async () => {
  const secret = ofType('gcp:secretmanager/secret:Secret').find((s) => s.inputs.secretId === `${prefix}-destination-orders-signing`);
  expect(secret).toBeDefined();
  expect(ofType('gcp:secretmanager/secretVersion:SecretVersion').filter((v) => v.name === 'herald-signing-orders')).toHaveLength(1);
  expect(ofType('gcp:secretmanager/secretIamMember:SecretIamMember').filter((r) => r.name.startsWith('herald-signing')).map((r) => [r.inputs.role, r.inputs.member])).toEqual([
    ['roles/secretmanager.secretAccessor', 'group:hooks@example.com'],
  ]);
  expect(Object.keys(program.destinationSigningSecrets)).toEqual(['orders']);
});

test('stack outputs: the ingest and admin URLs, the CLI base URL and the topic names', async () => {
  expect(await valueOf(program.ingestUrl)).toBe(functionUrl('ingest'));
  expect(await valueOf(program.adminUrl)).toBe(functionUrl('admin'));
  expect(program.heraldUrl).toBe(`https://${REGION}-${PROJECT}.cloudfunctions.net`);
  const topics: Record<string, string> = {};
  for (const [key, name] of Object.entries(program.topics)) topics[key] = await valueOf(name);
  expect(topics).toEqual(Object.fromEntries(Object.entries(topology.topics).map(([key, t]) => [key, t.name])));
  const urls: Record<string, string> = {};
  for (const [name, url] of Object.entries(program.functionUrls)) urls[name] = await valueOf(url);
  expect(Object.keys(urls).sort()).toEqual([...FUNCTION_NAMES].sort());
  for (const name of FUNCTION_NAMES as readonly FunctionName[]) expect(urls[name]).toBe(functionUrl(name));
});

function seconds(d: unknown): number {
  return Number(String(d).replace(/s$/, ''));
}

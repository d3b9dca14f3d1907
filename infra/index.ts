import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import * as random from '@pulumi/random';
import { FIRESTORE_INCREASING_FIELDS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS, FIRESTORE_UNINDEXED_FIELDS } from '../shared/firestore-schema';
import { FunctionName, heraldTopology } from '../shared/topology';
import { ProjectApis } from './components/apis';
import { DeclaredDestination } from './components/declared-destination';
import { FirestoreData } from './components/firestore-data';
import { FunctionSource } from './components/function-source';
import { HeraldFunction } from './components/herald-function';
import { Messaging } from './components/messaging';
import { HeraldMonitoring } from './components/monitoring';
import { PubSubAccess } from './components/pubsub-access';
import { Scheduler } from './components/scheduler';
import { Secrets } from './components/secrets';
import { SigningSecrets } from './components/signing-secrets';
import { ServiceAccounts } from './components/service-accounts';
import { UsageExport } from './components/usage-export';
import { functionsBaseUrl, readInfraConfig } from './config';
import { functionEnvironment } from './function-env';
import { compositeIndexes } from './firestore-plan';
import { buildPackage } from './build';
import { FunctionPlan, inDeployOrder, planFunctions } from './function-plan';

const config = readInfraConfig();
const { project, region } = config;
// The functions get the shard counts through their settings (HERALD_LANE_SHARDS …): the same numbers.
const names = { prefix: config.topicPrefix, laneShards: config.herald.laneShards, retryShards: config.herald.retryShards };
const topology = heraldTopology(names);
const plans = planFunctions({ topology, names, functions: config.functions, deliveryTimeoutMs: config.herald.deliveryTimeoutMs, billing: config.billing });

const apis = new ProjectApis('herald', { project });
const afterApis = { dependsOn: [apis] };

const projectNumber = gcp.organizations.getProjectOutput({ projectId: project }).number;
const pubsubServiceAgent = pulumi.interpolate`serviceAccount:service-${projectNumber}@gcp-sa-pubsub.iam.gserviceaccount.com`;

const accounts = new ServiceAccounts('herald', { project, prefix: config.topicPrefix, pubsubServiceAgent }, afterApis);
/**
 * HERALD_SECRETS_KEY, which encrypts destination signing secrets in Firestore: the stack's
 * herald:secretsKey, else 32 random bytes made once and kept in the stack's state (a secret
 * there). Declared even when the stack sets its own key, so a generated key that encrypted
 * data before is never deleted with the resource.
 */
const generatedSecretsKey = new random.RandomBytes('herald-secrets-key', { length: 32 });
const secretsKey = config.secrets.secretsKey ?? generatedSecretsKey.base64;
const secrets = new Secrets('herald', { project, prefix: config.topicPrefix, values: { ...config.secrets, secretsKey }, reader: accounts.runtime.member }, afterApis);
// dist/ is compiled here, before it is zipped: what is deployed is the code as it is now.
buildPackage(config.packageDir, (line) => void pulumi.log.info(line));
const source = new FunctionSource('herald', { project, region, packageDir: config.packageDir }, afterApis);
const data = new FirestoreData(
  'herald',
  {
    project,
    location: config.firestoreLocation,
    createDatabase: config.createFirestoreDatabase,
    deletionPolicy: config.firestoreDeletionPolicy,
    indexes: compositeIndexes(FIRESTORE_QUERIES),
    ttlFields: Object.values(FIRESTORE_TTL_FIELDS),
    // Bulk no query selects by, and values that only grow (a hotspot at the end of their index).
    unindexedFields: [...FIRESTORE_UNINDEXED_FIELDS, ...FIRESTORE_INCREASING_FIELDS],
  },
  afterApis,
);

const environment = functionEnvironment<pulumi.Input<string>>({
  settingsEnv: config.settingsEnv,
  project,
  topicPrefix: config.topicPrefix,
  pushBaseUrl: functionsBaseUrl(project, region),
  identities: { push: accounts.push.email, scheduler: accounts.scheduler.email },
  dedicatedLanes: config.dedicatedLanes,
  ...(config.usageExport ? { usageExport: config.usageExport } : {}),
});

/**
 * Who may call each function. Pub/Sub and Cloud Scheduler call with their own identities;
 * ingest and admin check a bearer token themselves, so they are public by default (a
 * producer outside Google Cloud has no Google identity); `herald:publicEndpoints false`
 * keeps them to `herald:invokers`.
 */
function invokersOf(plan: FunctionPlan): Record<string, pulumi.Input<string>> {
  const invokers: Record<string, pulumi.Input<string>> = {};
  if (plan.pushed) invokers.push = accounts.push.member;
  if (plan.scheduled) invokers.scheduler = accounts.scheduler.member;
  if (plan.userFacing) {
    if (config.publicEndpoints) invokers.public = 'allUsers';
    for (const member of config.invokers) invokers[member.replace(/[^A-Za-z0-9]+/g, '-')] = member;
  }
  return invokers;
}

const functions = {} as Record<FunctionName, HeraldFunction>;
for (const plan of inDeployOrder(plans)) {
  functions[plan.name] = new HeraldFunction(
    plan.name,
    {
      project,
      region,
      plan,
      source: { bucket: source.bucket.name, object: source.object.name },
      serviceAccountEmail: accounts.runtime.email,
      buildServiceAccount: pulumi.interpolate`projects/${project}/serviceAccounts/${accounts.build.email}`,
      environment,
      secretEnvironment: secrets.environment,
      invokers: invokersOf(plan),
    },
    // The build and the first start need the grants: Cloud Run checks secret access at deploy.
    { dependsOn: [apis, accounts, secrets, ...(data.database ? [data.database] : []), ...plan.deployAfter.map((name) => functions[name])] },
  );
}

const messaging = new Messaging(
  'herald',
  { project, topology, names, push: { endpointFor: (fn) => functions[fn].url, serviceAccountEmail: accounts.push.email }, pubsubServiceAgent, dedicatedLanes: config.dedicatedLanes },
  { dependsOn: [apis, accounts] },
);
const pubsubAccess = new PubSubAccess(
  'herald-runtime-pubsub',
  { member: accounts.runtime.member, publishes: messaging.publishedByHerald, pulls: messaging.pulledByHerald, destinationTopics: config.destinationTopics },
  { dependsOn: [messaging] },
);
for (const [id, spec] of Object.entries(config.destinations)) {
  if (spec.topic !== undefined && !config.destinationTopics.includes(spec.topic)) {
    void pulumi.log.warn(`destination ${id} publishes to ${spec.topic}, which herald:destinationTopics does not list: the program grants Herald no publisher role on it, so its owner must (docs/what-a-destination-receives.md#iam)`);
  }
}

new Scheduler(
  'herald',
  {
    project,
    region,
    schedules: topology.schedules,
    targets: Object.fromEntries(plans.map((p) => [p.name, { url: functions[p.name].url, timeoutSeconds: p.timeoutSeconds }])) as Record<FunctionName, { url: pulumi.Output<string>; timeoutSeconds: number }>,
    serviceAccountEmail: accounts.scheduler.email,
    hold: config.pumpHold,
  },
  { dependsOn: [apis, ...Object.values(functions)] },
);

/** The daily usage export to BigQuery (docs/usage.md#exporting-to-bigquery), with `herald:usageExport`; nothing of it otherwise. */
const checkPlan = plans.find((p) => p.name === 'suspension-check')!;
const usageExport = config.usageExport
  ? new UsageExport(
      'herald-usage-export',
      {
        project,
        region,
        plan: config.usageExport,
        prefix: config.topicPrefix,
        runtimeMember: accounts.runtime.member,
        target: { url: functions['suspension-check'].url, timeoutSeconds: checkPlan.timeoutSeconds },
        schedulerServiceAccountEmail: accounts.scheduler.email,
      },
      { dependsOn: [apis, accounts, functions['suspension-check']] },
    )
  : undefined;

const declared = Object.entries(config.destinations).map(
  ([id, spec]) =>
    [id, new DeclaredDestination(`destination-${id}`, { adminUrl: functions.admin.url, adminToken: config.secrets.adminToken, destinationId: id, spec }, { dependsOn: [messaging, pubsubAccess, data, ...Object.values(functions)] })] as const,
);

const signing = new SigningSecrets(
  'herald-signing',
  { project, prefix: config.topicPrefix, secrets: Object.fromEntries(declared.map(([id, d]) => [id, d.secret])), readers: config.signingSecretReaders },
  afterApis,
);

/**
 * The dashboard and alert policies (docs/observability.md), unless `herald:monitoring false`.
 * They watch metrics by name and need none of the resources above to exist first.
 */
const monitoring = config.monitoring
  ? new HeraldMonitoring('herald-monitoring', { project, region, names, thresholds: config.alerts, alertEmails: config.alertEmails, alertChannels: config.alertChannels }, afterApis)
  : undefined;
if (monitoring !== undefined && config.alertEmails.length === 0 && config.alertChannels.length === 0) {
  void pulumi.log.warn('the alert policies notify no one: set herald:alertEmails or herald:alertChannels (an incident only shows in the console until then)');
}
if (monitoring === undefined && config.alertEmails.length + config.alertChannels.length > 0) {
  void pulumi.log.warn('herald:monitoring is false: no alert policy is declared, so herald:alertEmails and herald:alertChannels notify no one');
}

/**
 * Each function's billing mode, and for an instance-based one the command that applies it:
 * Cloud Functions' API (and so gcp.cloudfunctionsv2.Function) has no field for CPU
 * allocation; it is a setting of the function's Cloud Run service, which a later deploy of the
 * function keeps (docs/deploying.md#billing-mode).
 */
export const billing = Object.fromEntries(plans.map((p) => [p.name, { mode: p.billing, ...(p.billing === 'instance' ? { apply: instanceBillingCommand(p.name) } : {}) }]));
for (const p of plans.filter((p) => p.billing === 'instance')) {
  void pulumi.log.warn(`${p.name} is set to instance-based billing, which Cloud Functions' API cannot apply: after pulumi up, run ${instanceBillingCommand(p.name)} (the stack output billing.${p.name}.apply)`);
}

function instanceBillingCommand(name: FunctionName): string {
  return `gcloud run services update ${name} --project=${project} --region=${region} --no-cpu-throttling`;
}

export const ingestUrl = functions.ingest.url;
export const adminUrl = functions.admin.url;
/** `HERALD_URL` for the CLI: functions live at `${heraldUrl}/<name>`. */
export const heraldUrl = functionsBaseUrl(project, region);
export const functionUrls = Object.fromEntries(Object.entries(functions).map(([name, fn]) => [name, fn.url]));
export const topics = Object.fromEntries(Object.entries(messaging.topics).map(([key, topic]) => [key, topic.name]));
export const serviceAccounts = { runtime: accounts.runtime.email, push: accounts.push.email, scheduler: accounts.scheduler.email, build: accounts.build.email };
export const destinationSecrets = pulumi.secret(Object.fromEntries(declared.map(([id, d]) => [id, d.secret])));
/** Where each declared destination's signing secret is in Secret Manager. */
export const destinationSigningSecrets = signing.names;
/** The dashboard's id and each alert policy's name; absent with `herald:monitoring false`. */
export const monitoringResources = monitoring && {
  dashboard: monitoring.dashboard.id,
  alertPolicies: Object.fromEntries(Object.entries(monitoring.policies).map(([key, policy]) => [key, policy.name])),
};
/** The usage export's table (`project.dataset.table`); absent without `herald:usageExport`. */
export const usageExportTable = usageExport && pulumi.interpolate`${project}.${usageExport.table.datasetId}.${usageExport.table.tableId}`;

import { FUNCTION_NAMES, FunctionName, INTERNAL_FUNCTIONS, laneTopology, Topology, TopologyNames } from '../shared/topology';
import { BillingMode, FunctionSizeInput, InfraConfigError } from './config';

/**
 * What each function is deployed with, derived from the topology (who calls it, for how
 * long) and the stack's config. Pure, so the rules are tested without Pulumi.
 */

export interface FunctionSize {
  memory: string;
  cpu: string;
  minInstances: number;
  maxInstances: number;
  concurrency: number;
  timeoutSeconds: number;
  billing: BillingMode;
}

export interface FunctionPlan extends FunctionSize {
  name: FunctionName;
  /** NODE_OPTIONS of its instances: V8's heap sized to the instance's memory (nodeOptionsFor). */
  nodeOptions: string;
  /** Pub/Sub pushes to it (a topology subscription or a destination's lane): the push identity may invoke it. */
  pushed: boolean;
  /** Cloud Scheduler starts it: the scheduler identity may invoke it. */
  scheduled: boolean;
  /** Users call it (ingest, admin): reachable from the internet, guarded by its bearer token. */
  userFacing: boolean;
  /**
   * Functions deployed before it: ingest and route publish lane bundles (domain/intake/lane-bundle.ts)
   * that only a `deliver` of the same release reads, so an upgrade brings `deliver` up first.
   */
  deployAfter: FunctionName[];
}

/** Who reads what a function publishes, and so goes first in a deploy. */
const DEPLOY_AFTER: Partial<Record<FunctionName, FunctionName[]>> = { ingest: ['deliver'], route: ['deliver'] };

// Concurrency suits functions that mostly wait on the network; the scheduled ones are one run at a time.
const DEFAULT_SIZE: Omit<FunctionSize, 'timeoutSeconds' | 'billing'> = { memory: '512Mi', cpu: '1', minInstances: 0, maxInstances: 20, concurrency: 80 };
const SIZE_DEFAULTS: Partial<Record<FunctionName, Partial<FunctionSize>>> = {
  deliver: { maxInstances: 100 },
  admin: { maxInstances: 5, concurrency: 20 },
  pump: { concurrency: 1, maxInstances: 2 },
  'suspension-check': { concurrency: 1, maxInstances: 2 },
};

/** Cloud Functions' own default, for functions nothing pushes to or schedules. */
const DEFAULT_TIMEOUT_SECONDS = 60;
/** Beyond a scheduled run's `runSeconds`: the round in progress finishes and reports. */
export const RUN_SLACK_SECONDS = 30;

export interface PlanInputs {
  topology: Topology;
  names: TopologyNames;
  functions: Partial<Record<FunctionName, FunctionSizeInput>>;
  deliveryTimeoutMs: number;
  /** The stack's `herald:billing` (default request): each function's unless it names its own. */
  billing?: BillingMode;
}

export function planFunctions(inputs: PlanInputs): FunctionPlan[] {
  const { topology } = inputs;
  // Lanes are created at runtime, but they push to a function deployed here.
  const pushes = [...topology.subscriptions, laneTopology('lane', inputs.names).subscription].filter((s) => s.pushTo !== undefined);
  const problems: string[] = [];
  const plans = FUNCTION_NAMES.map((name): FunctionPlan => {
    const ackDeadlines = pushes.filter((s) => s.pushTo === name).map((s) => s.ackDeadlineSeconds);
    const runs = topology.schedules.filter((s) => s.function === name);
    const runSeconds = Math.max(0, ...runs.map((s) => s.runSeconds ?? 0));
    const given = inputs.functions[name] ?? {};
    // Pub/Sub waits a push's whole ack deadline for the answer: a pushed handler may use all of it.
    const defaultTimeout = runSeconds > 0 ? runSeconds + RUN_SLACK_SECONDS : ackDeadlines.length > 0 ? Math.min(...ackDeadlines) : DEFAULT_TIMEOUT_SECONDS;
    const plan: FunctionPlan = {
      name,
      ...DEFAULT_SIZE,
      ...SIZE_DEFAULTS[name],
      timeoutSeconds: defaultTimeout,
      billing: inputs.billing ?? 'request',
      ...given,
      nodeOptions: '',
      pushed: ackDeadlines.length > 0,
      scheduled: runs.length > 0,
      userFacing: !INTERNAL_FUNCTIONS.includes(name),
      deployAfter: DEPLOY_AFTER[name] ?? [],
    };
    const at = (field: keyof FunctionSize) => `herald:functions.${name}.${field}`;
    if (plan.timeoutSeconds * 1000 <= inputs.deliveryTimeoutMs) {
      problems.push(`${at('timeoutSeconds')}: ${plan.timeoutSeconds} s must be longer than the delivery timeout (herald:settings.deliveryTimeoutMs, ${inputs.deliveryTimeoutMs} ms)`);
    }
    if (plan.timeoutSeconds <= runSeconds) {
      problems.push(`${at('timeoutSeconds')}: ${plan.timeoutSeconds} s must be longer than the ${runSeconds} s a scheduled run lasts`);
    }
    const ackDeadline = Math.min(...ackDeadlines);
    if (plan.timeoutSeconds > ackDeadline) {
      problems.push(`${at('timeoutSeconds')}: ${plan.timeoutSeconds} s exceeds the ${ackDeadline} s push ack deadline: Pub/Sub would push a message again while it is handled`);
    }
    if (plan.concurrency > 1 && Number(plan.cpu) < 1) {
      problems.push(`${at('concurrency')}: more than one request at a time needs cpu of at least 1 (Cloud Run)`);
    }
    if (plan.billing === 'instance' && Number(plan.cpu) < 1) {
      problems.push(`${at('billing')}: instance-based billing (CPU always allocated) needs cpu of at least 1 (Cloud Run); this function has ${plan.cpu}`);
    }
    plan.nodeOptions = nodeOptionsFor(plan.memory);
    if (plan.minInstances > plan.maxInstances) problems.push(`${at('minInstances')}: must not exceed maxInstances (${plan.maxInstances})`);
    return plan;
  });
  if (problems.length) throw new InfraConfigError(problems);
  return plans;
}

/** `plans` with every function after those it is deployed after (FunctionPlan.deployAfter). */
export function inDeployOrder(plans: readonly FunctionPlan[]): FunctionPlan[] {
  const placed = new Set<FunctionName>();
  const ordered: FunctionPlan[] = [];
  const place = (plan: FunctionPlan, path: FunctionName[]) => {
    if (placed.has(plan.name)) return;
    if (path.includes(plan.name)) throw new InfraConfigError([`functions deployed after each other in a circle: ${[...path, plan.name].join(' → ')}`]);
    for (const first of plan.deployAfter) {
      const before = plans.find((p) => p.name === first);
      if (before) place(before, [...path, plan.name]);
    }
    placed.add(plan.name);
    ordered.push(plan);
  };
  for (const plan of plans) place(plan, []);
  return ordered;
}

/** A Cloud Run memory size (`512Mi`, `1Gi`) in MiB. */
export function memoryMiB(memory: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(memory);
  if (!m) throw new InfraConfigError([`memory ${memory} must be a size like 256Mi or 1Gi`]);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

/**
 * V8 sizes its heap to the machine it finds, not to the instance: with no limit, a deliver
 * instance let its heap grow to 190 MiB for 50 MiB live (10,000 deliveries, measured: `npm run
 * bench -- scale`) and its RSS to 300 MiB, as it would on a large host. The old space gets 3/8
 * of the instance's memory (the rest: the libraries' code, about 80 MiB, sockets and buffers),
 * and up to 1 GiB a young generation of 4 MiB semi-spaces (V8's default is 16): the same run
 * then holds 160 MiB RSS.
 */
export function nodeOptionsFor(memory: string): string {
  const mib = memoryMiB(memory);
  const options = [`--max-old-space-size=${Math.floor((mib * 3) / 8)}`];
  if (mib <= 1024) options.push('--max-semi-space-size=4');
  return options.join(' ');
}

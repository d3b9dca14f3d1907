import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryRateLeaseStore } from '../../shared/adapters/memory/rate-lease-store';
import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { MemoryTopicPublisher } from '../../shared/adapters/memory/topic-publisher';
import { DeliverDeps } from '../../shared/app/delivery/deliver';
import { DeliveryLimiter } from '../../shared/app/rate/delivery-limiter';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { DeliveryLogHead } from '../../shared/app/destinations/delivery-log-head';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { SlowDestinations } from '../../shared/domain/delivery/slow-destinations';
import { UnrecordedSends } from '../../shared/domain/delivery/unrecorded-sends';
import { createLogger } from '../../shared/log';
import { HttpSender } from '../../shared/ports/http';
import { systemClock } from '../../shared/ports/clock';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';

/**
 * deliver's dependencies over the memory stores, with what a test looks at: the messages
 * published (dead letters, hand-overs), the log lines, the stores. `http` and `topics` answer
 * as the test says; anything else of DeliverDeps may be replaced through `overrides`.
 */
export function memoryDeliverDeps(
  destinations: MemoryDestinationStore,
  io: { http: HttpSender; topics?: MemoryTopicPublisher },
  overrides: Partial<DeliverDeps> = {},
): { deps: DeliverDeps; logHead: DeliveryLogHead; bus: { topic: string; message: PubSubMessage }[]; logs: Record<string, unknown>[]; deliveries: MemoryDeliveryStore; rateStore: MemoryCounterStore } {
  const bus: { topic: string; message: PubSubMessage }[] = [];
  const logs: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'DEBUG', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) });
  const deliveries = new MemoryDeliveryStore();
  const rateStore = new MemoryCounterStore();
  const counters = new DestinationCounters(rateStore, systemClock, log, { bucketMs: 60_000, flushMs: 1_000, shard: 0 });
  const logHead = new DeliveryLogHead(rateStore, systemClock, counters);
  const deps: DeliverDeps = {
    bus: { publish: async (topic, message) => String(bus.push({ topic, message })) },
    // Only dedicated lanes are provisioned on a publish, and tests hand over to shared lanes only.
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    deadLetterTopic: 'herald-dead-letter',
    directory: new DestinationDirectory(destinations, systemClock, 0),
    destinations,
    deliveries,
    counters,
    logHead,
    limiter: new DeliveryLimiter(new MemoryRateLeaseStore(), systemClock, log, 'test'),
    maxRateWaitMs: 30_000,
    sharedLaneWaitMs: 30_000,
    slow: new SlowDestinations({ slowMs: 2000, forgetMs: 60_000 }),
    names: { prefix: 'herald' },
    notificationsTopic: 'herald-notifications',
    http: io.http,
    topics: io.topics ?? new MemoryTopicPublisher(),
    clock: systemClock,
    log,
    policy: { presetTimeoutMs: 5000, timeScale: 1 },
    // Every account may publish to the unit tests' topic project; a test narrows it through `overrides`.
    allowedTopics: async () => ({ entries: ['projects/acme-audit/topics/*'] }),
    unrecorded: new UnrecordedSends(),
    ...overrides,
  };
  return { deps, logHead, bus, logs, deliveries, rateStore };
}

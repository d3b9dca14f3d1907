import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryEventTypeStore } from '../../shared/adapters/memory/event-type-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { MemoryPortalStore } from '../../shared/adapters/memory/portal-store';
import { MemoryQuotaStore } from '../../shared/adapters/memory/quota-store';
import { MemoryRateLeaseStore } from '../../shared/adapters/memory/rate-lease-store';
import { MemoryReplayStore } from '../../shared/adapters/memory/replay-store';
import { destinationStoreConformance } from '../support/destination-store-conformance';
import { eventTypeStoreConformance } from '../support/event-type-store-conformance';
import { intakeStoreConformance } from '../support/intake-store-conformance';
import { portalStoreConformance } from '../support/portal-store-conformance';
import { quotaStoreConformance } from '../support/quota-store-conformance';
import { rateLeaseStoreConformance } from '../support/rate-lease-store-conformance';
import { replayStoreConformance } from '../support/replay-store-conformance';

/** The ports' contract suites on the memory fakes (the same suites run on the Firestore adapters in test/integration/firestore-store-contracts.test.ts). */
destinationStoreConformance('memory', () => new MemoryDestinationStore(), { changes: false });
replayStoreConformance('memory', () => new MemoryReplayStore());
eventTypeStoreConformance('memory', () => new MemoryEventTypeStore());
rateLeaseStoreConformance('memory', () => new MemoryRateLeaseStore());
intakeStoreConformance('memory', () => new MemoryIntakeStore());
quotaStoreConformance('memory', () => new MemoryQuotaStore());
portalStoreConformance('memory', () => new MemoryPortalStore());

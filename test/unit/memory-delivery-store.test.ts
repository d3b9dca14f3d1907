import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { deliveryStoreConformance } from '../support/delivery-store-conformance';

deliveryStoreConformance('memory', (grouping) => new MemoryDeliveryStore(grouping));

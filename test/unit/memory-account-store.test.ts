import { MemoryAccountStore } from '../../shared/adapters/memory/account-store';
import { accountStoreConformance } from '../support/account-store-conformance';

accountStoreConformance('memory', () => new MemoryAccountStore());

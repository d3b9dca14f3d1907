// An integration test's bound on a hang, longer on a loaded machine (test/support/patience.ts).
import { patient } from '../support/patience';

jest.setTimeout(patient(90_000));

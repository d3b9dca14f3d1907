// Jest's 5 s per test, longer on a loaded machine (test/support/patience.ts): a unit test's
// timeout is a bound on a hang, and the simulations on fake timers take real CPU time.
import { patient } from '../support/patience';

jest.setTimeout(patient(5_000));

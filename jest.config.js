/** Unit tests run without services; integration tests share one pair of emulators. */
const transform = {
  '^.+\\.ts$': ['ts-jest', { diagnostics: false }],
  // ESM-only dependencies, turned into CommonJS for Jest's module system (Node requires them natively).
  'node_modules/(oauth4webapi|@marcbachmann/cel-js)/.+\\.js$': ['ts-jest', { diagnostics: false, tsconfig: { allowJs: true, module: 'commonjs', target: 'ES2022' } }],
};
const transformIgnorePatterns = ['/node_modules/(?!oauth4webapi/|@marcbachmann/cel-js/)'];

/** @type {import('jest').Config} */
module.exports = {
  // Jest's default is one worker fewer than the cores: one, on the 2-core machines here and in CI,
  // and most integration time is waiting on the emulators, timers and receivers. Two workers halved
  // the run (764 s -> 382 s measured); with 223 suites, three take it from 796 s (900 s in CI) to
  // 672 s, every timing-sensitive test green; each file keeps its own project ids.
  maxWorkers: 3,
  // A worker that ends with a large heap takes longer than Jest's 500 ms grace to exit (Node frees
  // the heap at a natural exit: measured 250 ms at 0.5 GB, over 500 ms at 0.35-0.6 GB of test
  // workers' heaps), and Jest kills it and prints "failed to exit gracefully" though nothing was
  // left open. A worker past 300 MB after a file is replaced, so each ends small (121-236 ms).
  workerIdleMemoryLimit: '300MB',
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup/unit-timeout.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/setup/global-setup.ts',
      globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/setup/integration-timeout.ts'],
    },
  ],
};

/** Unit tests run without services; integration tests share one pair of emulators. */
const transform = { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] };

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/setup/global-setup.ts',
      globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/setup/integration-timeout.ts'],
    },
  ],
};

// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'console/dist/**'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', process: 'readonly', __dirname: 'readonly', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The delivery rules stay pure: no SDKs, no network, no clock reads.
    files: ['shared/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@google-cloud/*', 'undici', 'node:http', 'node:https', 'http', 'https', 'net', 'node:dns', 'dns', 'node:fs', 'fs', '../adapters/*', '../app/*'], message: 'shared/domain is pure: do I/O through ports in shared/ports.ts.' },
          ],
          // isIP is a pure parser; sockets are not.
          paths: [{ name: 'node:net', allowImportNames: ['isIP'], message: 'shared/domain is pure: only isIP may come from node:net.' }],
        },
      ],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'Pass the clock in (Clock port).' }],
    },
  },
);

// Lint: typescript-eslint's recommended rules, plus the workflow sandbox rule: workflows/ must stay deterministic,
// so Node built-ins and impure packages are forbidden there (activities are imported as types only); and the
// simulated PMS (sandbox/) shares no code with the connectors that talk to it (source/).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', '.tools/**', '.data/**', 'db/migrations/**', 'dist/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'Workflows are deterministic: no Node built-ins.' },
            { group: ['../activities/*', '../activities'], allowTypeImports: true, message: 'Import activities as types only.' },
          ],
          paths: ['fs', 'path', 'crypto', 'http', 'https', 'net', 'os', 'child_process', 'drizzle-orm', 'postgres', 'ulid', 'hono', 'pino', '@temporalio/activity', '@temporalio/client', '@temporalio/worker'].map((name) => ({
            name,
            message: 'Workflows are deterministic: this package is not allowed in workflows/.',
          })),
        },
      ],
    },
  },
  {
    files: ['sandbox/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../source', '../source/**', '../../source', '../../source/**'],
              message: 'The sandbox is written independently of the connectors: nothing in sandbox/ imports source/.',
            },
          ],
        },
      ],
    },
  },
);

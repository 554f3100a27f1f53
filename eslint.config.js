// Lint: typescript-eslint's recommended rules, plus the workflow sandbox rule: workflows/ must stay deterministic,
// so Node built-ins and impure packages are forbidden there (activities are imported as types only); and the
// simulated PMS (sandbox/) shares no code with the connectors that talk to it (source/).
import tseslint from 'typescript-eslint';

/** The files of domain/ that may use one impure thing each (domain/README.md says which and why). */
const IMPURE_DOMAIN = ['content', 'secrets', 'signature', 'filters', 'scalars'];
const DOMAIN_PURE = 'domain/ is pure: no Node built-ins, no HTTP framework (domain/README.md names the exceptions).';

export default tseslint.config(
  { ignores: ['node_modules/**', '.tools/**', '.data/**', 'db/migrations/**', 'dist/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Typed rules, on the TypeScript files tsconfig.json covers: a promise nobody awaits or handles is an error (the
  // first rule Temporal's samples turn on), so is a promise handed where a void callback is expected, and a switch
  // over a union without a `default` must name every member (a `default` is a deliberate "all the others").
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
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
            {
              group: IMPURE_DOMAIN.map((f) => `../domain/${f}`),
              allowTypeImports: true,
              message: 'This part of domain/ uses node:crypto or Hono (domain/README.md): not for workflows.',
            },
          ],
          paths: [
            'fs',
            'path',
            'crypto',
            'http',
            'https',
            'net',
            'os',
            'child_process',
            'drizzle-orm',
            'postgres',
            'ulid',
            'hono',
            'pino',
            '@temporalio/activity',
            '@temporalio/client',
            '@temporalio/worker',
          ].map((name) => ({
            name,
            message: 'Workflows are deterministic: this package is not allowed in workflows/.',
          })),
        },
      ],
    },
  },
  // domain/ is pure (domain/README.md): no Node built-ins, no HTTP framework, except the five files that table names,
  // each with the one thing it may use.
  {
    files: ['domain/**/*.ts'],
    ignores: IMPURE_DOMAIN.map((f) => `domain/${f}.ts`),
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['node:*', 'hono', 'hono/*', '@hono/*'], message: DOMAIN_PURE }] }] },
  },
  {
    files: ['domain/content.ts', 'domain/secrets.ts', 'domain/signature.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['node:*', '!node:crypto', 'hono', 'hono/*', '@hono/*'], message: DOMAIN_PURE }] }] },
  },
  {
    files: ['domain/filters.ts', 'domain/scalars.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['node:*', 'hono', 'hono/*', '@hono/*', '!@hono/zod-openapi'], message: DOMAIN_PURE }] }],
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

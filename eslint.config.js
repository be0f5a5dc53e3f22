import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import noCycle from './scripts/eslint/no-cycle.mjs';

export default tseslint.config(
  // test/fixtures/cycle/ holds import cycles on purpose: test/unit/lint-cycles.test.ts lints it (as if it were the project) to show the rule fails on them.
  { ignores: ['dist/', 'node_modules/', 'bench/results/', '.scratch/', 'test/fixtures/cycle/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // No import cycle in src/, type imports included (scripts/eslint/no-cycle.mjs): a module's dependencies are read before it, and a folder can be understood from its imports down.
    files: ['src/**/*.ts'],
    plugins: { spillway: { rules: { 'no-cycle': noCycle } } },
    rules: {
      'spillway/no-cycle': 'error',
      // Every error a user can see carries a catalogued code (src/errors/Errors.ts).
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Error']", message: "throw a SpillwayError with a code from src/errors/Errors.ts, not a plain Error" }],
    },
  },
  {
    // The web UI runs in the browser.
    files: ['ui/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['document', 'location', 'localStorage', 'fetch', 'addEventListener', 'removeEventListener', 'setInterval', 'clearInterval', 'navigator', 'Intl'].map((name) => [name, 'readonly']),
      ),
    },
  },
  {
    files: ['bin/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);

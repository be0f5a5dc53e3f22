import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'bench/results/', '.scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The web UI runs in the browser.
    files: ['ui/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['document', 'location', 'localStorage', 'fetch', 'addEventListener', 'removeEventListener', 'setInterval', 'clearInterval'].map((name) => [name, 'readonly']),
      ),
    },
  },
  {
    files: ['bin/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);

import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** The built-in error classes: none is made or extended in src/, whose errors are SpillwayErrors with a code. */
const BUILTIN_ERROR = '/^(Error|RangeError|TypeError|SyntaxError|ReferenceError|EvalError|URIError|AggregateError)$/';
const CODED = 'a SpillwayError with a code from src/errors/Errors.ts';
const CODED_ERRORS = [
  { selector: `NewExpression[callee.name=${BUILTIN_ERROR}]`, message: `throw ${CODED}, not a built-in error` },
  { selector: `CallExpression[callee.name=${BUILTIN_ERROR}]`, message: `throw ${CODED}, not a built-in error` },
  { selector: `:matches(ClassDeclaration, ClassExpression)[superClass.name=${BUILTIN_ERROR}]`, message: `extend SpillwayError (src/errors/Errors.ts), not a built-in error, so the class carries a code` },
  { selector: 'ThrowStatement > :matches(Literal, TemplateLiteral)', message: `throw ${CODED}, not a bare value` },
];

export default tseslint.config(
  // test/fixtures/cycle/ is an import cycle on purpose, test/fixtures/uncoded-errors/ throws uncoded errors on purpose:
  // test/unit/lint-cycles.test.ts and test/unit/lint-errors.test.ts lint them (as if each were the project) to show the rules fail on them.
  { ignores: ['dist/', 'node_modules/', 'bench/results/', '.scratch/', 'test/fixtures/cycle/', 'test/fixtures/uncoded-errors/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // No import cycle in src/: a module's dependencies are read before it, and a folder can be understood from its imports down.
    // The TypeScript resolver maps the `.js` of an import to its `.ts` source.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // The rule reads each imported file to follow its imports: with the TypeScript parser, as the linted file.
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: `${import.meta.dirname}/tsconfig.json` })],
    },
    // Packages are not followed (a cycle through node_modules is not ours): the rule then costs the lint about 3 s, not 11.
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // Every error a user can see carries a catalogued code (src/errors/Errors.ts): no built-in error class is made,
      // extended or thrown bare, nor a string thrown (test/unit/lint-errors.test.ts shows each refused).
      'no-restricted-syntax': ['error', ...CODED_ERRORS],
    },
  },
  {
    // The two threads of a TaskManager meet only in what sits at the top of src/network/ (buffers, the handover, events,
    // the channel and writer contracts): a task thread's class never reaches into the network thread's, nor the reverse.
    files: ['src/network/**/*.ts'],
    plugins: { 'import-x': importX },
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            { target: './src/network/taskThread', from: './src/network/networkThread', message: 'the task thread reads the network thread only through src/network/handover/' },
            { target: './src/network/networkThread', from: './src/network/taskThread', message: 'the network thread reaches the task thread only through src/network/handover/' },
          ],
        },
      ],
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

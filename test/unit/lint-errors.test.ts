import path from 'node:path';
import { ESLint } from 'eslint';
import { expect, test } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const fixture = path.join(root, 'test/fixtures/uncoded-errors');

/** The rule and line of every problem the project's own eslint.config.js finds in `files`, linted as if the fixture were the project. */
async function problems(files: string[]): Promise<string[]> {
  const eslint = new ESLint({ cwd: fixture, overrideConfigFile: path.join(root, 'eslint.config.js') });
  const results = await eslint.lintFiles(files);
  return results.flatMap((result) => result.messages.map((message) => `${path.basename(result.filePath)}:${message.line} ${message.ruleId}`));
}

test('the lint refuses in src/ every built-in error class made, called or extended, and a thrown string', async () => {
  expect(await problems(['src/throwsUncoded.ts'])).toEqual([3, 4, 5, 6, 7, 8, 11].map((line) => `throwsUncoded.ts:${line} no-restricted-syntax`));
}, 60_000);

test('the lint passes coded errors, and a base class that extends Error under a targeted disable', async () => {
  expect(await problems(['src/CodedError.ts', 'src/throwsCoded.ts'])).toEqual([]);
}, 60_000);

import path from 'node:path';
import { ESLint } from 'eslint';
import { expect, test } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const fixture = path.join(root, 'test/fixtures/cycle');

/** Lints `files` under `cwd` with the project's own eslint.config.js, as if `cwd` were the project; each message as "file: rule". */
async function lint(cwd: string, files: string[]): Promise<string[]> {
  const eslint = new ESLint({ cwd, overrideConfigFile: path.join(root, 'eslint.config.js') });
  const results = await eslint.lintFiles(files);
  return results.flatMap((result) => result.messages.map((message) => `${path.basename(result.filePath)}: ${message.ruleId}`));
}

test('the lint refuses two modules of src/ that import each other, naming the rule', async () => {
  expect(await lint(fixture, ['src/a.ts', 'src/b.ts'])).toEqual(['a.ts: spillway/no-cycle', 'b.ts: spillway/no-cycle']);
}, 60_000);

test('the lint refuses a cycle of type imports alone', async () => {
  expect(await lint(fixture, ['src/types/shape.ts', 'src/types/registry.ts'])).toEqual(['shape.ts: spillway/no-cycle', 'registry.ts: spillway/no-cycle']);
}, 60_000);

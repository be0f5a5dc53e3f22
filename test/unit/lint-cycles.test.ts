import path from 'node:path';
import { ESLint } from 'eslint';
import { expect, test } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const fixture = path.join(root, 'test/fixtures/cycle');

/** Lints `files` under `cwd` with the project's own eslint.config.js, as if `cwd` were the project. */
async function lint(cwd: string, files: string[]): Promise<ESLint.LintResult[]> {
  const eslint = new ESLint({ cwd, overrideConfigFile: path.join(root, 'eslint.config.js') });
  return eslint.lintFiles(files);
}

test('the lint refuses two modules of src/ that import each other, naming the rule', async () => {
  const results = await lint(fixture, ['src/a.ts', 'src/b.ts']);
  const rules = results.flatMap((result) => result.messages.map((message) => `${path.basename(result.filePath)}: ${message.ruleId}`));
  expect(rules).toEqual(['a.ts: import-x/no-cycle', 'b.ts: import-x/no-cycle']);
}, 60_000);

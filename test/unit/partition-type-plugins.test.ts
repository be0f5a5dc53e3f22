/**
 * A partition type plug-in (`--partition-type FILE`) that cannot be used fails with
 * SPW_ERR_CONFIG, whether its module does not load or its export is not a partition type.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { loadPartitionTypes, registerPartitionType } from '../../src/network/networkThread/partition/PartitionTypes.js';
import type { PartitionType } from '../../src/network/networkThread/partition/PartitionType.js';
import { tempDir } from '../helpers/plane.js';

const { dir, remove } = tempDir('partition-type-plugins');
afterAll(remove);

/** A module file under `dir` with `source` as its text. */
function moduleFile(name: string, source: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, source);
  return file;
}

const CONFIG = expect.objectContaining({ code: 'SPW_ERR_CONFIG' });

test.each([
  ['does not exist', path.join(dir, 'missing.mjs')],
  ['does not parse', moduleFile('syntax.mjs', 'export default {')],
  ['throws while it loads', moduleFile('throws.mjs', "throw new Error('no');")],
  ['exports no default', moduleFile('empty.mjs', 'export const x = 1;')],
  ['exports a string', moduleFile('string.mjs', "export default 'sort-merge';")],
  ['exports a type with no flags', moduleFile('flags.mjs', "export default { name: 'half' };")],
  ['exports a type with no methods', moduleFile('methods.mjs', "export default { name: 'half', isPipelined: true, isReReadable: false, isCompressible: false };")],
])('a partition type module that %s is refused with SPW_ERR_CONFIG', async (_, file) => {
  await expect(loadPartitionTypes([file])).rejects.toMatchObject({ code: 'SPW_ERR_CONFIG' });
});

test('registerPartitionType refuses a value that is not a partition type, or a bad name, with SPW_ERR_CONFIG', () => {
  const shaped = { isPipelined: true, isReReadable: false, isCompressible: false, poolSize: () => 1, createStorage: () => undefined };
  for (const type of [null, 7, { ...shaped, name: '1st' }, { ...shaped, name: 'ok', isPipelined: 'yes' }, { ...shaped, name: 'ok', createStorage: undefined }]) {
    expect(() => registerPartitionType(type as unknown as PartitionType), JSON.stringify(type)).toThrow(CONFIG);
  }
});

/* global console, process */
// Prints docs/errors.md's error table from the catalogue (after `npm run build`), or with
// --write puts it in place in docs/errors.md:
//   node scripts/error-table.mjs [--write]
// test/unit/docs.test.ts fails, showing this table, when docs/errors.md and the catalogue differ.
import fs from 'node:fs';
import { errorTable } from '../dist/src/errors/ErrorTable.js';

const PAGE = 'docs/errors.md';

if (process.argv.includes('--write')) {
  const page = fs.readFileSync(PAGE, 'utf8');
  const start = page.indexOf('| code |');
  const end = page.indexOf('\n\n', start);
  fs.writeFileSync(PAGE, page.slice(0, start) + errorTable() + (end < 0 ? '\n' : page.slice(end)));
} else {
  console.log(errorTable());
}

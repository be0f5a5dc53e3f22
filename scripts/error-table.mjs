/* global console */
// Prints docs/errors.md's error table from the catalogue (after `npm run build`):
//   node scripts/error-table.mjs
// test/unit/docs.test.ts fails, showing this table, when docs/errors.md and the catalogue differ.
import { errorTable } from '../dist/src/errors/ErrorTable.js';

console.log(errorTable());

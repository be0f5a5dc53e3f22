/* global console */
// Prints the README's error table from the catalogue (after `npm run build`):
//   node scripts/error-table.mjs
// test/errors.test.ts fails, showing this table, when the README and the catalogue differ.
import { errorTable } from '../dist/src/errors/ErrorTable.js';

console.log(errorTable());

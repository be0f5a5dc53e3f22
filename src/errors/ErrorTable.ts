import { ERRORS, type ErrorCode } from './Errors.js';

/** docs/errors.md's table of error codes, as the catalogue has them (scripts/error-table.mjs prints it). */
export function errorTable(): string {
  const rows = (Object.keys(ERRORS) as ErrorCode[]).map((code) => `| \`${code}\` | ${ERRORS[code].status} | ${ERRORS[code].meaning} |`);
  return ['| code | HTTP status | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

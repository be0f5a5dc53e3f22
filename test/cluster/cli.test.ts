/**
 * The `spillway` command as a user runs it (bin/ over dist/: `npm run build` first):
 * help exits 0, a usage error exits 1 with SPW_ERR_USAGE, and `submit` prints
 * `submitted <id>` first and, with --wait, a failed job's coded error.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SUBMIT_OPTIONS } from '../../src/cli/commands/SubmitCommand.js';
import { spillway } from '../helpers/command.js';




describe('help exits 0 on stdout', () => {
  test.each([[['--help']], [['help']]])('spillway %j lists the commands', async (args) => {
    const { code, stdout } = await spillway(...args);
    expect(code).toBe(0);
    for (const command of ['jobmanager', 'taskmanager', 'local', 'submit', 'help']) expect(stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  });

  test.each([[['help', 'submit']], [['submit', '--help']]])('spillway %j lists the options of submit', async (args) => {
    const { code, stdout } = await spillway(...args);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: spillway submit /);
    for (const name of Object.keys(SUBMIT_OPTIONS)) expect(stdout).toMatch(new RegExp(`^  --${name}\\b`, 'm'));
    expect(stdout).not.toMatch(/--slots/);
  });
});

describe('a usage error exits 1 with SPW_ERR_USAGE on stderr', () => {
  test('submit --slots 4 x names --slots as unknown to submit', async () => {
    const { code, stdout, stderr } = await spillway('submit', '--slots', '4', 'x');
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^spillway: SPW_ERR_USAGE: .*\bsubmit\b.*--slots/);
  });

  test.each([[['jobmanager', '--port', 'abc']], [['local', '--memory', '-1']], [['nope']], [['help', 'nope']], [[]]])('spillway %j', async (args) => {
    const { code, stderr } = await spillway(...args);
    expect(code).toBe(1);
    // No command at all prints the overview instead of an error line.
    expect(stderr).toMatch(args.length === 0 ? /^usage: spillway COMMAND/ : /^spillway: SPW_ERR_USAGE: /);
  });
});

describe('submit of a job file that does not exist', () => {
  // The JobManager's port is closed: a call would fail SPW_ERR_CONTROL_CALL, so SPW_ERR_USAGE shows none was made.
  test.each(['nope.ts', 'nope.mjs', 'jobs/nope.js', 'jobs/nope'])('submit %s fails before any call, saying the file is missing', async (target) => {
    const { code, stdout, stderr } = await spillway('submit', target, '--jobmanager', 'http://127.0.0.1:1');
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(new RegExp(`^spillway: SPW_ERR_USAGE: no job file ${target.replace('.', '\\.')}: \\S+ does not exist`));
  });
});

describe('submit against a JobManager', () => {
  let server: http.Server;
  let url = '';
  const FAILED = { id: 'job-0001', state: 'FAILED', errorCode: 'SPW_ERR_TASK_FAILED', error: 'boom', durationMs: 5, progress: 0, counters: { recordsIn: 0, bytesIn: 0, recordsOut: 0, bytesOut: 0 } };

  beforeAll(async () => {
    // A stand-in that accepts a job and reports it FAILED with a code: the exchange `submit --wait` reads.
    server = http.createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      if (request.method === 'POST' && request.url === '/jobs') {
        response.statusCode = 202;
        response.end(JSON.stringify({ id: FAILED.id }));
      } else if (request.method === 'GET' && request.url === `/jobs/${FAILED.id}`) {
        response.end(JSON.stringify(FAILED));
      } else {
        response.statusCode = 404;
        response.end(JSON.stringify({ code: 'SPW_ERR_NOT_FOUND', error: 'no such route' }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('prints `submitted <id>` as its first line', async () => {
    const { code, stdout } = await spillway('submit', 'wordcount', '--jobmanager', url);
    expect(code).toBe(0);
    expect(stdout.split('\n')[0]).toBe(`submitted ${FAILED.id}`);
  });

  test("with --wait, a failed job's code and message, and exit 1", async () => {
    const { code, stdout } = await spillway('submit', 'wordcount', '--jobmanager', url, '--wait');
    expect(code).toBe(1);
    const lines = stdout.split('\n');
    expect(lines[0]).toBe(`submitted ${FAILED.id}`);
    expect(lines).toContain(`error: ${FAILED.errorCode}: ${FAILED.error}`);
  });
});

/** The command line's option tables: parsing, checking and help, without starting a process (docs/operations.md is checked in docs.test.ts). */
import { SQL_OPTIONS } from '../../src/cli/commands/SqlCommand.js';
import { describe, expect, test } from 'vitest';
import { COMMANDS } from '../../src/cli/commands/Commands.js';
import { JOBMANAGER_OPTIONS } from '../../src/cli/commands/JobManagerCommand.js';
import { LOCAL_OPTIONS } from '../../src/cli/commands/LocalCommand.js';
import { SAVEPOINT_OPTIONS } from '../../src/cli/commands/SavepointCommand.js';
import { SUBMIT_OPTIONS } from '../../src/cli/commands/SubmitCommand.js';
import { TASKMANAGER_OPTIONS } from '../../src/cli/commands/TaskManagerCommand.js';
import { formatHelp, optionsFor, parseOptions, type OptionTable, type Positional } from '../../src/cli/OptionTable.js';
import { codeOf } from '../../src/errors/Errors.js';
import { DEFAULT_HEARTBEAT_TIMEOUT_MS, DEFAULT_HISTORY_BYTES } from '../../src/jobmanager/JobManagerOptions.js';
import { DEFAULT_JOBMANAGER_PORT, DEFAULT_JOBMANAGER_URL } from '../../src/ServerOptions.js';
import { DEFAULT_MANAGED_MEMORY, DEFAULT_SLOTS } from '../../src/taskmanager/TaskManagerOptions.js';

const TABLES: Record<string, OptionTable> = {
  jobmanager: JOBMANAGER_OPTIONS,
  taskmanager: TASKMANAGER_OPTIONS,
  local: LOCAL_OPTIONS,
  submit: SUBMIT_OPTIONS,
  sql: SQL_OPTIONS,
  savepoint: SAVEPOINT_OPTIONS,
  stop: SAVEPOINT_OPTIONS,
};
const SUBMIT_ARGS: readonly Positional[] = [{ name: 'JOB_NAME|FILE', required: true }];

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('it did not throw');
}

describe('parsing', () => {
  test('values are converted to their types, and an option not given takes its default', () => {
    const { values, positionals, help } = parseOptions('jobmanager', JOBMANAGER_OPTIONS, [], ['--port', '0', '--history-bytes', '300kb', '--restart-attempts', '0', '--insecure']);
    expect(values.port).toBe(0);
    expect(values['history-bytes']).toBe(300 * 1024);
    expect(values['restart-attempts']).toBe(0);
    expect(values.insecure).toBe(true);
    expect(values['heartbeat-timeout']).toBe(DEFAULT_HEARTBEAT_TIMEOUT_MS);
    expect(values['data-dir']).toBeUndefined();
    expect(values['partition-type']).toEqual([]);
    expect(positionals).toEqual([]);
    expect(help).toBe(false);
  });

  test('defaults come from the options modules', () => {
    const { values } = parseOptions('local', LOCAL_OPTIONS, [], []);
    expect(values.port).toBe(DEFAULT_JOBMANAGER_PORT);
    expect(values.slots).toBe(DEFAULT_SLOTS);
    expect(values['managed-memory']).toBe(DEFAULT_MANAGED_MEMORY);
    expect(parseOptions('submit', SUBMIT_OPTIONS, SUBMIT_ARGS, ['x']).values.jobmanager).toBe(DEFAULT_JOBMANAGER_URL);
    expect(parseOptions('jobmanager', JOBMANAGER_OPTIONS, [], []).values['history-bytes']).toBe(DEFAULT_HISTORY_BYTES);
  });

  test('a repeatable option collects its values in order, a positional is kept, --opt=value works', () => {
    const { values, positionals } = parseOptions('submit', SUBMIT_OPTIONS, SUBMIT_ARGS, ['--param', 'a=1', 'wordcount', '--param=b=2', '--parallelism=4', '--wait']);
    expect(values.param).toEqual(['a=1', 'b=2']);
    expect(values.parallelism).toBe(4);
    expect(values.wait).toBe(true);
    expect(values.typecheck).toBe(false);
    expect(positionals).toEqual(['wordcount']);
  });

  test('an option the command does not take is SPW_ERR_USAGE naming it, the command and all its options', () => {
    const error = thrown(() => parseOptions('submit', SUBMIT_OPTIONS, SUBMIT_ARGS, ['--slots', '4', 'x']));
    expect(codeOf(error)).toBe('SPW_ERR_USAGE');
    const message = (error as Error).message;
    expect(message).toContain('submit');
    expect(message).toContain('--slots');
    for (const name of Object.keys(SUBMIT_OPTIONS)) expect(message).toContain(`--${name}`);
  });

  test.each([
    ['jobmanager', ['--port', 'abc']],
    ['jobmanager', ['--port', '65536']],
    ['jobmanager', ['--port', '-1']],
    ['jobmanager', ['--heartbeat-timeout', '0']],
    ['jobmanager', ['--heartbeat-timeout', '1.5']],
    ['jobmanager', ['--restart-strategy', 'sometimes']],
    ['jobmanager', ['--restart-attempts', '-1']],
    ['jobmanager', ['--log-level', 'loud']],
    ['local', ['--memory', '-1']],
    ['local', ['--memory', 'lots']],
    ['local', ['--memory', '0']],
    ['local', ['--slots', '0']],
    ['local', ['--taskmanagers', 'two']],
    ['taskmanager', ['--jobmanager', 'not a url']],
    ['taskmanager', ['--jobmanager', 'ftp://127.0.0.1:21']],
    ['taskmanager', ['--slots']],
    ['taskmanager', ['--insecure=yes']],
    ['jobmanager', ['stray']],
    ['submit', []],
    ['submit', ['one', 'two']],
  ])('%s %j is SPW_ERR_USAGE, not a default', (command, args) => {
    const positionals = command === 'submit' ? SUBMIT_ARGS : [];
    expect(codeOf(thrown(() => parseOptions(command, TABLES[command], positionals, args)))).toBe('SPW_ERR_USAGE');
  });

  test('--help and -h ask for help, whatever else is missing', () => {
    expect(parseOptions('submit', SUBMIT_OPTIONS, SUBMIT_ARGS, ['--help']).help).toBe(true);
    expect(parseOptions('jobmanager', JOBMANAGER_OPTIONS, [], ['-h']).help).toBe(true);
  });
});

describe('help', () => {
  test.each(COMMANDS.map((c) => [c.name, c] as const))('%s --help lists every option of its table, with its default', (name, command) => {
    const help = command.help();
    expect(help.split('\n')[0]).toMatch(new RegExp(`^usage: spillway ${name}\\b`));
    for (const [option, spec] of Object.entries(TABLES[name])) {
      const line = help.split('\n').find((l) => l.trimStart().startsWith(`--${option} `) || l.trim() === `--${option}`);
      expect(line, `--${option}`).toBeDefined();
      if (spec.default !== undefined) expect(line).toContain('(default ');
    }
  });

  test('a size default is shown as a size, a number as it is', () => {
    const help = formatHelp('local', 'Local.', LOCAL_OPTIONS, []);
    expect(help).toMatch(/--memory SIZE .*\(default 256mb\)/);
    expect(help).toMatch(/--buffer-size SIZE .*\(default 32kb\)/);
    expect(help).toMatch(new RegExp(`--port N .*\\(default ${DEFAULT_JOBMANAGER_PORT}\\)`));
  });
});

describe('a local cluster hands each process its own options', () => {
  const either = { ...JOBMANAGER_OPTIONS, ...TASKMANAGER_OPTIONS };
  const extra = ['--cancel-timeout', '5000', '--log-level', 'warn', '--job-history', '3', '--insecure', '--metrics-retention=100'];

  test('each command gets the options it takes, with their values', () => {
    expect(optionsFor(TASKMANAGER_OPTIONS, either, extra)).toEqual(['--cancel-timeout', '5000', '--log-level', 'warn', '--insecure', '--metrics-retention=100']);
    expect(optionsFor(JOBMANAGER_OPTIONS, either, extra)).toEqual(['--log-level', 'warn', '--job-history', '3', '--insecure', '--metrics-retention=100']);
  });

  test('an option no process takes, or one without its value, is SPW_ERR_USAGE', () => {
    expect(codeOf(thrown(() => optionsFor(JOBMANAGER_OPTIONS, either, ['--wait'])))).toBe('SPW_ERR_USAGE');
    expect(codeOf(thrown(() => optionsFor(JOBMANAGER_OPTIONS, either, ['--job-history'])))).toBe('SPW_ERR_USAGE');
  });
});


import { parseArgs } from 'node:util';
import { SpillwayError } from '../errors/Errors.js';
import { formatSize, parseSize } from './Size.js';

/** What an option's value is: converted and checked before a command sees it. A list of strings is a choice. */
export type OptionType = 'string' | 'boolean' | 'int' | 'size' | 'duration-ms' | 'url' | 'urls' | readonly string[];

/** One option of a command: parsing, checking and help all come from this. */
export interface OptionSpec {
  readonly type: OptionType;
  readonly help: string;
  /** The value's name in help (`N`, `SIZE`, `MS`...); one follows from the type if absent. */
  readonly placeholder?: string;
  /** Given any number of times, the values in order. */
  readonly multiple?: boolean;
  readonly default?: string | number;
  /** Bounds of an int, size or duration-ms, inclusive; the least is 1 unless said. */
  readonly min?: number;
  readonly max?: number;
}

/** A command's options by name (without the dashes), in the order help lists them. */
export type OptionTable = Readonly<Record<string, OptionSpec>>;

type ValueOf<S extends OptionSpec> = S['type'] extends 'boolean'
  ? boolean
  : S['type'] extends 'int' | 'size' | 'duration-ms'
    ? number
    : S['type'] extends readonly (infer C)[]
      ? C
      : string;

/** The parsed values of a table: booleans are always there, lists always lists, others when given or defaulted. */
export type OptionValues<T extends OptionTable> = {
  -readonly [K in keyof T]: T[K]['multiple'] extends true
    ? ValueOf<T[K]>[]
    : T[K]['type'] extends 'boolean'
      ? boolean
      : T[K] extends { default: string | number }
        ? ValueOf<T[K]>
        : ValueOf<T[K]> | undefined;
};

/** A command's positional arguments, for its usage line and to check their number. */
export interface Positional {
  readonly name: string;
  readonly required: boolean;
}

export interface ParsedArgs<T extends OptionTable> {
  values: OptionValues<T>;
  positionals: string[];
  /** --help or -h was given: the command prints its help and does nothing else. */
  help: boolean;
}

const MIN_DEFAULT = 1;

/** Every command's `--help` (or `-h`); the parser answers it, so no table lists it. */
const HELP_OPTION: OptionSpec = { type: 'boolean', help: 'print this help and exit (also -h)' };

/**
 * Parses a command's arguments (after the command's name) against its table: an
 * option the table has not, a missing or bad value, a positional too many or too few
 * is SPW_ERR_USAGE naming it; values come back converted, defaults filled in.
 */
export function parseOptions<T extends OptionTable>(command: string, table: T, positionals: readonly Positional[], args: string[]): ParsedArgs<T> {
  // Non-strict, so that this module (not parseArgs' prose) says what is wrong; the tokens keep every detail.
  const { tokens } = parseArgs({ args, options: parseArgsConfig(table), strict: false, allowPositionals: true, tokens: true });
  const given = new Map<string, string[]>();
  const rest: string[] = [];
  let help = false;
  for (const token of tokens) {
    if (token.kind === 'positional') rest.push(token.value);
    if (token.kind !== 'option') continue;
    if (token.name === 'help' || token.name === 'h') {
      help = true;
      continue;
    }
    const spec = Object.hasOwn(table, token.name) ? table[token.name] : undefined;
    if (spec === undefined) throw unknownOption(command, table, token.rawName);
    if (spec.type === 'boolean' && token.value !== undefined) throw usage(`${token.rawName} takes no value, not "${token.value}"`);
    if (spec.type !== 'boolean' && token.value === undefined) throw usage(`${token.rawName} wants a value (${placeholder(spec)})`);
    const values = given.get(token.name) ?? [];
    given.set(token.name, spec.multiple ? [...values, token.value ?? ''] : [token.value ?? '']);
  }
  if (!help) checkPositionals(command, positionals, rest);
  return { values: convertAll(table, given), positionals: rest, help };
}

function parseArgsConfig(table: OptionTable): Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> {
  const config: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {};
  for (const [name, spec] of Object.entries(table)) config[name] = { type: spec.type === 'boolean' ? 'boolean' : 'string', multiple: spec.multiple ?? false };
  config.help = { type: 'boolean' };
  config.h = { type: 'boolean' };
  return config;
}

function checkPositionals(command: string, wanted: readonly Positional[], given: string[]): void {
  const required = wanted.filter((p) => p.required).length;
  if (given.length < required) throw usage(`${command} needs ${wanted.map((p) => p.name).join(' ')}`);
  if (given.length > wanted.length) {
    const takes = wanted.length === 0 ? 'takes no argument' : `takes ${wanted.map((p) => p.name).join(' ')}`;
    throw usage(`${command} ${takes}, not "${given.slice(wanted.length).join(' ')}"`);
  }
}

function convertAll<T extends OptionTable>(table: T, given: Map<string, string[]>): OptionValues<T> {
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(table)) {
    const texts = given.get(name);
    if (spec.multiple) values[name] = (texts ?? []).map((text) => convert(name, spec, text));
    else if (spec.type === 'boolean') values[name] = texts !== undefined;
    else if (texts !== undefined) values[name] = convert(name, spec, texts[0]);
    else values[name] = spec.default;
  }
  return values as OptionValues<T>;
}

/** One value of option `name`, converted to its type and checked against its bounds. */
function convert(name: string, spec: OptionSpec, text: string): string | number {
  const type = spec.type;
  if (typeof type !== 'string') {
    if (!type.includes(text)) throw usage(`--${name} must be one of ${type.join(', ')}, not "${text}"`);
    return text;
  }
  switch (type) {
    case 'int':
    case 'duration-ms':
      return bounded(name, spec, /^-?\d+$/.test(text) ? Number(text) : NaN, text);
    case 'size':
      return bounded(name, spec, sizeOrNaN(text), text);
    case 'url':
      if (!/^https?:$/.test(urlProtocol(text))) throw usage(`--${name} must be an http or https URL, not "${text}"`);
      return text;
    case 'urls':
      // Several JobManagers of one cluster (HA): the leader is found among them.
      for (const url of text.split(',')) if (!/^https?:$/.test(urlProtocol(url))) throw usage(`--${name} must be http or https URLs, comma-separated, not "${text}"`);
      return text;
    default:
      return text;
  }
}

function sizeOrNaN(text: string): number {
  try {
    return parseSize(text);
  } catch {
    return NaN;
  }
}

function urlProtocol(text: string): string {
  try {
    return new URL(text).protocol;
  } catch {
    return '';
  }
}

function bounded(name: string, spec: OptionSpec, value: number, text: string): number {
  const min = spec.min ?? MIN_DEFAULT;
  const max = spec.max ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw usage(`--${name} must be ${wants(spec)}, not "${text}"`);
  return value;
}

/** What a value of the spec's type and bounds is, for errors. */
function wants(spec: OptionSpec): string {
  const min = spec.min ?? MIN_DEFAULT;
  const range = spec.max === undefined ? `of ${spec.type === 'size' ? formatSize(min) : min} or more` : `from ${min} to ${spec.max}`;
  if (spec.type === 'size') return `a size ${range} (examples: 32kb, 64mb, 1gb)`;
  if (spec.type === 'duration-ms') return `a number of milliseconds ${range}`;
  return `an integer ${range}`;
}

function unknownOption(command: string, table: OptionTable, rawName: string): SpillwayError {
  const names = [...Object.keys(table), 'help'].map((name) => `--${name}`).join(', ');
  return usage(`${command} has no option ${rawName}; its options are ${names}`);
}

function usage(message: string): SpillwayError {
  return new SpillwayError('SPW_ERR_USAGE', message);
}

/** The name of an option's value in help and errors. */
function placeholder(spec: OptionSpec): string {
  if (spec.placeholder !== undefined) return spec.placeholder;
  const type = spec.type;
  if (typeof type !== 'string') return type.join('|');
  return { string: 'VALUE', boolean: '', int: 'N', size: 'SIZE', 'duration-ms': 'MS', url: 'URL', urls: 'URL[,URL...]' }[type];
}

/** What `--help` prints for a command: its usage line, what it does, and one aligned line an option, with its default. */
export function formatHelp(command: string, summary: string, table: OptionTable, positionals: readonly Positional[]): string {
  const args = positionals.map((p) => (p.required ? p.name : `[${p.name}]`));
  const entries: [string, OptionSpec][] = [...Object.entries(table), ['help', HELP_OPTION]];
  const rows = entries.map(([name, spec]) => {
    const value = placeholder(spec);
    const flag = `--${name}${value === '' ? '' : ` ${value}`}${spec.multiple ? ' ...' : ''}`;
    return [flag, spec.default === undefined ? spec.help : `${spec.help} (default ${formatDefault(spec)})`] as const;
  });
  const width = Math.max(...rows.map(([flag]) => flag.length));
  const lines = rows.map(([flag, help]) => `  ${flag.padEnd(width)}  ${help}`);
  return [`usage: spillway ${[command, ...args, '[options]'].join(' ')}`, '', summary, '', 'options:', ...lines].join('\n');
}

/** A command's every option on one line, as docs/operations.md lists it: `spillway submit JOB_NAME|FILE [--jobmanager URL] [--param k=v ...] ...`. */
export function synopsis(command: string, table: OptionTable, positionals: readonly Positional[]): string {
  const options = Object.entries(table).map(([name, spec]) => {
    const value = placeholder(spec);
    return `[--${name}${value === '' ? '' : ` ${value}`}${spec.multiple ? ' ...' : ''}]`;
  });
  return ['spillway', command, ...positionals.map((p) => (p.required ? p.name : `[${p.name}]`)), ...options].join(' ');
}

function formatDefault(spec: OptionSpec): string {
  return spec.type === 'size' && typeof spec.default === 'number' ? formatSize(spec.default) : String(spec.default);
}

/**
 * The arguments of `args` that `table` takes (each option with its value), in order;
 * an option `known` lists but `table` does not is left out. An option neither has is
 * SPW_ERR_USAGE: a local cluster hands each process the options of its own command.
 */
export function optionsFor(table: OptionTable, known: OptionTable, args: readonly string[]): string[] {
  const taken: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    const name = flag.replace(/^--/, '');
    const spec = Object.hasOwn(known, name) ? known[name] : undefined;
    if (!flag.startsWith('--') || spec === undefined) throw usage(`${args[i]} is not an option any process of a local cluster takes`);
    if (spec.type !== 'boolean' && inline === undefined && i + 1 >= args.length) throw usage(`${args[i]} wants a value (${placeholder(spec)})`);
    const option = spec.type === 'boolean' || inline !== undefined ? [args[i]] : [args[i], args[++i]];
    if (Object.hasOwn(table, name)) taken.push(...option);
  }
  return taken;
}

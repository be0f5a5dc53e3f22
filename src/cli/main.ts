import { SpillwayError } from '../errors/Errors.js';
import { SERVING, type Command, type Outcome } from './Command.js';
import { COMMANDS } from './commands/Commands.js';
import { printFailure } from './Failure.js';

/** `spillway` with no command, `spillway --help` and `spillway help`: the commands there are. */
function overview(): string {
  const rows: [string, string][] = [...COMMANDS.map((c): [string, string] => [c.name, c.summary]), ['help [COMMAND]', "Prints a command's options, or this."]];
  const width = Math.max(...rows.map(([name]) => name.length));
  return [
    'usage: spillway COMMAND [options]',
    '',
    'commands:',
    ...rows.map(([name, summary]) => `  ${name.padEnd(width)}  ${summary}`),
    '',
    "`spillway help COMMAND` or `spillway COMMAND --help` lists a command's options.",
  ].join('\n');
}

function commandNamed(name: string): Command {
  const command = COMMANDS.find((c) => c.name === name);
  if (command !== undefined) return command;
  if (name.startsWith('-')) throw new SpillwayError('SPW_ERR_USAGE', `${name} is an option: the command comes first (spillway COMMAND [options]); spillway help lists the commands`);
  throw new SpillwayError('SPW_ERR_USAGE', `unknown command "${name}"; the commands are ${[...COMMANDS.map((c) => c.name), 'help'].join(', ')}`);
}

/** `spillway help [COMMAND]`. */
function help(args: string[]): number {
  if (args.length > 1) throw new SpillwayError('SPW_ERR_USAGE', `help takes one command, not "${args.join(' ')}"`);
  console.log(args.length === 0 ? overview() : commandNamed(args[0]).help());
  return 0;
}

/**
 * Dispatches to the command named first. Every error prints `spillway: <code>: <message>`
 * and exits 1; no command at all prints the overview on stderr and exits 1 too.
 */
async function main([name, ...args]: string[]): Promise<Outcome> {
  if (name === undefined) {
    console.error(overview());
    return 1;
  }
  if (name === '--help' || name === '-h') return help([]);
  if (name === 'help') return help(args);
  return commandNamed(name).run(args);
}

main(process.argv.slice(2)).then(
  (outcome) => {
    if (outcome !== SERVING) process.exit(outcome);
  },
  (error: unknown) => {
    printFailure(error);
    process.exit(1);
  },
);

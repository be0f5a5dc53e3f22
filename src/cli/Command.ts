import { formatHelp, parseOptions, synopsis, type OptionTable, type OptionValues, type Positional } from './OptionTable.js';

/**
 * What a command's run resolves to: an exit code, or SERVING for a server that
 * keeps the process alive until a signal stops it.
 */
export const SERVING = 'serving';
export type Outcome = number | typeof SERVING;

/** A command as the dispatcher sees it: its name, what it does, its help, and a run over its raw arguments. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  help(): string;
  /** Its every option on one line, for docs/operations.md. */
  synopsis(): string;
  run(args: string[]): Promise<Outcome>;
}

export interface CommandSpec<T extends OptionTable> {
  name: string;
  /** One sentence: what it does (the first line of its help, and its line in `spillway help`). */
  summary: string;
  options: T;
  positionals?: readonly Positional[];
  run(values: OptionValues<T>, positionals: string[]): Promise<Outcome>;
}

/** A command whose parsing and help both come from its option table; `--help` prints the help and exits 0. */
export function defineCommand<T extends OptionTable>(spec: CommandSpec<T>): Command {
  const positionals = spec.positionals ?? [];
  const help = (): string => formatHelp(spec.name, spec.summary, spec.options, positionals);
  return {
    name: spec.name,
    summary: spec.summary,
    help,
    synopsis: () => synopsis(spec.name, spec.options, positionals),
    async run(args) {
      const parsed = parseOptions(spec.name, spec.options, positionals, args);
      if (!parsed.help) return spec.run(parsed.values, parsed.positionals);
      console.log(help());
      return 0;
    },
  };
}

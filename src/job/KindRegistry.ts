import { InvalidJobError } from './InvalidJobError.js';

/** What every spec of an operator, a source or a sink carries: the `kind` its definitions name. */
export interface KindSpec {
  readonly kind: string;
}

/**
 * The specs of one family (operators, sources or sinks), one a kind, registered through
 * `register` as partition types are (src/network/networkThread/partition/PartitionTypes.ts): what a
 * kind means is asked of its spec, never told apart by its name elsewhere. Also the one
 * place that reads the old key-only shapes (`{ map: f }`, `{ text: path }`).
 */
export class KindRegistry<S extends KindSpec> {
  private readonly specs = new Map<string, S>();

  /**
   * @param what the family's word in errors ("operator")
   * @param example how a definition of it is written, ending the refusal of an unknown one (or '')
   */
  constructor(
    private readonly what: string,
    private readonly example = '',
  ) {}

  /** Registers a spec under its kind; the same spec again is a no-op, another of a taken kind an error. */
  register(spec: S): void {
    const known = this.specs.get(spec.kind);
    if (known === spec) return;
    if (known !== undefined) throw new InvalidJobError(`the ${this.what} kind "${spec.kind}" is registered already`);
    this.specs.set(spec.kind, spec);
  }

  /** The registered kinds, in the order they were registered (the order they are listed to a user). */
  get kinds(): string[] {
    return [...this.specs.keys()];
  }

  /** The spec of a normalized definition's kind. */
  spec(kind: string): S {
    return this.specs.get(kind)!;
  }

  /**
   * `value` with its `kind`: as it is if it names a registered one, or given the one
   * registered kind among its keys (the old shape). Refuses anything else with
   * SPW_ERR_INVALID_JOB naming the known kinds.
   */
  normalize(value: unknown): { kind: string } {
    if (value === null || typeof value !== 'object') throw this.unknown(JSON.stringify(value) ?? String(value));
    const { kind } = value as { kind?: unknown };
    if (kind !== undefined) {
      if (typeof kind !== 'string' || !this.specs.has(kind)) throw this.unknown(`kind ${JSON.stringify(kind)}`);
      return value as { kind: string };
    }
    const keys = Object.keys(value).filter((key) => this.specs.has(key));
    if (keys.length !== 1) throw this.unknown(`with the fields ${JSON.stringify(Object.keys(value))}`);
    return { kind: keys[0], ...value };
  }

  private unknown(how: string): InvalidJobError {
    return new InvalidJobError(`unknown ${this.what} ${how}: a${/^[aeiou]/.test(this.what) ? 'n' : ''} ${this.what} is one of the kinds ${this.kinds.join(', ')}${this.example}`);
  }
}

import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILTIN_PARTITION_TYPES } from './BuiltinPartitionTypes.js';
import type { PartitionType } from './PartitionType.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** A job or a deployment names a partition type this process does not know. */
export class UnknownPartitionTypeError extends SpillwayError {
  constructor(readonly typeName: string) {
    super('SPW_ERR_UNKNOWN_PARTITION_TYPE', `unknown partition type "${typeName}"; known types are ${names().join(', ')} (load others with --partition-type FILE)`);
    this.name = 'UnknownPartitionTypeError';
  }
}

const registry = new Map<string, PartitionType>();

/**
 * Registers a partition type under its name. Registering the same object again is
 * a no-op; another type of a taken name is an error, so that a job's edge can mean
 * only one thing in a process.
 */
export function registerPartitionType(type: PartitionType): void {
  checkShape(type);
  const known = registry.get(type.name);
  if (known === type) return;
  if (known) throw new SpillwayError('SPW_ERR_CONFIG', `partition type "${type.name}" is registered already`);
  registry.set(type.name, type);
}

/** The type registered under `name`; throws UnknownPartitionTypeError, which lists the known ones. */
export function partitionType(name: string): PartitionType {
  const type = registry.get(name);
  if (!type) throw new UnknownPartitionTypeError(name);
  return type;
}

export function hasPartitionType(name: string): boolean {
  return registry.has(name);
}

function names(): string[] {
  return [...registry.keys()];
}

/**
 * Loads partition types from ES modules (`--partition-type FILE`): each module's
 * default export is a PartitionType or an array of them, registered as above.
 */
export async function loadPartitionTypes(files: readonly string[]): Promise<void> {
  for (const file of files) {
    let module: { default?: unknown };
    try {
      module = (await import(pathToFileURL(path.resolve(file)).href)) as { default?: unknown };
    } catch (error) {
      throw new SpillwayError('SPW_ERR_CONFIG', `partition type module ${file} could not be loaded: ${(error as Error).message}`, { cause: error });
    }
    const exported = module.default;
    const types = Array.isArray(exported) ? exported : [exported];
    try {
      for (const type of types) registerPartitionType(type as PartitionType);
    } catch (error) {
      throw new SpillwayError('SPW_ERR_CONFIG', `partition type module ${file}: ${(error as Error).message}`, { cause: error });
    }
  }
}

/** A module's export is checked as far as a value can be: what the engine calls must be there. */
function checkShape(type: PartitionType): void {
  const t = type as Partial<Record<keyof PartitionType, unknown>> | null;
  if (t === null || typeof t !== 'object') throw new SpillwayError('SPW_ERR_CONFIG', 'a partition type must be an object (the default export of its module)');
  if (typeof t.name !== 'string' || !/^[a-z][\w-]*$/i.test(t.name)) throw new SpillwayError('SPW_ERR_CONFIG', `partition type name ${String(t.name)} must be a word such as "sort-merge"`);
  for (const flag of ['isPipelined', 'isReReadable', 'isCompressible'] as const) {
    if (typeof t[flag] !== 'boolean') throw new SpillwayError('SPW_ERR_CONFIG', `partition type "${t.name}" must say ${flag} (true or false)`);
  }
  for (const method of ['poolSize', 'createStorage'] as const) {
    if (typeof t[method] !== 'function') throw new SpillwayError('SPW_ERR_CONFIG', `partition type "${t.name}" has no ${method}() method`);
  }
}

for (const type of BUILTIN_PARTITION_TYPES) registerPartitionType(type);

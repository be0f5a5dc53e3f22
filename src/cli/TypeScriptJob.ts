import path from 'node:path';
import type TS from 'typescript';
import { SpillwayError } from '../errors/Errors.js';

/** A job file the CLI strips the types from before uploading it. */
export function isTypeScript(file: string): boolean {
  return /\.[cm]?ts$/.test(file) && !/\.d\.[cm]?ts$/.test(file);
}

/** A job file that does not compile (SPW_ERR_MODULE): the message lists each problem as `file(line,col): error TSnnnn: ...`. */
export class JobSourceError extends SpillwayError {
  constructor(message: string) {
    super('SPW_ERR_MODULE', message);
    this.name = 'JobSourceError';
  }
}

// TypeScript is large: loaded only when a .ts job is submitted.
async function typescript(): Promise<typeof TS> {
  return (await import('typescript')).default;
}

/**
 * The JavaScript of a TypeScript job: types stripped by TypeScript's own
 * transpileModule (no type checking; see typecheckJob), as an ES module for the Node
 * of the TaskManagers. Refuses a syntax error, naming the file, line and column, and
 * a relative import: a job is uploaded as one module, and only `spillway` (and
 * Node's built-ins) resolve where it runs.
 */
export async function transpileJob(file: string, source: string): Promise<string> {
  const ts = await typescript();
  const { outputText, diagnostics = [] } = ts.transpileModule(source, {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
  });
  if (diagnostics.length > 0) throw new JobSourceError(`${file} does not compile:\n${format(ts, diagnostics)}`);
  const relative = ts.preProcessFile(outputText, true, true).importedFiles.filter((f) => /^\.{0,2}\//.test(f.fileName));
  if (relative.length > 0) {
    const names = relative.map((f) => f.fileName).join(', ');
    throw new JobSourceError(`${file} imports ${names}: a job is uploaded as one module, so only 'spillway' and node: modules can be imported; put the code in the job file`);
  }
  return outputText;
}

/**
 * Type-checks a job file with the tsconfig.json found above it (or strict NodeNext
 * defaults), the file alone as the root; resolves if it has no errors, else throws
 * them all.
 */
export async function typecheckJob(file: string): Promise<void> {
  const ts = await typescript();
  const program = ts.createProgram([file], { ...compilerOptions(ts, file), noEmit: true });
  const errors = ts.getPreEmitDiagnostics(program).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) throw new JobSourceError(`${file} has type errors:\n${format(ts, errors)}`);
}

function compilerOptions(ts: typeof TS, file: string): TS.CompilerOptions {
  const configFile = ts.findConfigFile(path.dirname(path.resolve(file)), (f) => ts.sys.fileExists(f));
  if (configFile === undefined) {
    // What examples/ are written against.
    return { strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, skipLibCheck: true };
  }
  const { config, error } = ts.readConfigFile(configFile, (f) => ts.sys.readFile(f));
  if (error) throw new JobSourceError(`cannot read ${configFile}:\n${format(ts, [error])}`);
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(configFile), undefined, configFile);
  if (parsed.errors.length > 0) throw new JobSourceError(`${configFile} is not valid:\n${format(ts, parsed.errors)}`);
  return parsed.options;
}

function format(ts: typeof TS, diagnostics: readonly TS.Diagnostic[]): string {
  return ts
    .formatDiagnostics(diagnostics, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => process.cwd(),
      getNewLine: () => '\n',
    })
    .trimEnd();
}

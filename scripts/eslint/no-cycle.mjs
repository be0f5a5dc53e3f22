/**
 * The lint's cycle rule: no module of the project reaches itself through its imports,
 * `import type` and `export ... from` included (import-x/no-cycle skips type imports,
 * and has no option not to). A cycle of types alone runs, but it still means no module
 * of it can be read, or moved, without the others.
 *
 * A module's imports are read with TypeScript's pre-processor (no type check), once a
 * version of the file; relative specifiers resolve as NodeNext does (`./a.js` is `./a.ts`).
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Each file's imported files, with the mtime they were read at. */
const imports = new Map();

/** The project files `file` imports, in order of their specifiers. */
function importsOf(file) {
  let mtime;
  try {
    mtime = fs.statSync(file).mtimeMs;
  } catch {
    return [];
  }
  const known = imports.get(file);
  if (known?.mtime === mtime) return known.targets;
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  const targets = importedFiles.map((specifier) => ({ specifier: specifier.fileName, target: resolve(file, specifier.fileName) })).filter((i) => i.target !== null);
  imports.set(file, { mtime, targets });
  return targets;
}

/** The source file a relative specifier names, or null (a package, or no such file). */
function resolve(from, specifier) {
  if (!specifier.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base, `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find((candidate) => candidate.endsWith('ts') && fs.existsSync(candidate)) ?? null;
}

/** The shortest chain of imports from `start` back to `file`, or null. */
function pathBack(start, file) {
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const current = queue.shift();
    for (const { target } of importsOf(current)) {
      if (target === file) {
        const chain = [current];
        for (let at = previous.get(current); at !== null; at = previous.get(at)) chain.unshift(at);
        return chain;
      }
      if (previous.has(target)) continue;
      previous.set(target, current);
      queue.push(target);
    }
  }
  return null;
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid a module from reaching itself through its imports, type imports included' },
    schema: [],
    messages: { cycle: 'Dependency cycle, type imports included: {{chain}}' },
  },
  create(context) {
    const file = context.physicalFilename;
    if (!path.isAbsolute(file)) return {};
    const check = (node) => {
      if (typeof node.source?.value !== 'string') return;
      const target = resolve(file, node.source.value);
      if (target === null || target === file) return;
      const chain = pathBack(target, file);
      if (chain === null) return;
      const names = [file, ...chain, file].map((f) => path.relative(context.cwd, f));
      context.report({ node, messageId: 'cycle', data: { chain: names.join(' -> ') } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
  },
};

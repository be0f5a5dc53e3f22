/**
 * The one registry mechanism of operators, sources and sinks: a spec a kind, the old
 * key-only shapes read there alone, unknown kinds refused naming the known ones.
 */
import { expect, test } from 'vitest';
import { KindRegistry } from '../../src/job/KindRegistry.js';
import { OPERATOR_KINDS, normalizeOperator, operatorSpec } from '../../src/runtime/operators/Operators.js';
import { SINK_KINDS } from '../../src/connectors/Sinks.js';
import { SOURCE_KINDS } from '../../src/connectors/Sources.js';

test('a kind is registered once: the same spec again is a no-op, another spec of its kind is refused', () => {
  const registry = new KindRegistry<{ kind: string }>('widget');
  const spec = { kind: 'a' };
  registry.register(spec);
  registry.register(spec);
  expect(registry.kinds).toEqual(['a']);
  expect(() => registry.register({ kind: 'a' })).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
});

test('a definition keeps its kind, an old key-only one is given it, any other is refused naming the kinds', () => {
  const registry = new KindRegistry<{ kind: string }>('widget', ', as { kind: "a" }');
  registry.register({ kind: 'a' });
  registry.register({ kind: 'b' });
  expect(registry.normalize({ kind: 'b', b: 1 })).toEqual({ kind: 'b', b: 1 });
  expect(registry.normalize({ a: 1 })).toEqual({ kind: 'a', a: 1 });
  expect(() => registry.normalize({ a: 1, b: 2 })).toThrow('unknown widget with the fields ["a","b"]: a widget is one of the kinds a, b, as { kind: "a" }');
  expect(() => registry.normalize({ kind: 'c' })).toThrow('unknown widget kind "c"');
});

test('the built-in operators, sources and sinks are registered, each spec under its own kind', () => {
  expect(OPERATOR_KINDS).toHaveLength(15);
  expect(SOURCE_KINDS).toHaveLength(8);
  expect(SINK_KINDS).toHaveLength(9);
  for (const kind of OPERATOR_KINDS) expect(operatorSpec(normalizeOperator({ [kind]: null })).kind).toBe(kind);
});

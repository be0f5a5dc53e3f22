import { describe, expect, test } from 'vitest';
import { JobBuilder } from '../../src/job/api/JobBuilder.js';
import { InvalidJobError, type JobDefinition, type Operator, type StageDefinition } from '../../src/job/JobDefinition.js';
import { validateJob } from '../../src/job/JobValidation.js';
import { join } from '../../src/job/builtins/Join.js';
import { keyedCombine } from '../../src/job/builtins/KeyedCombine.js';
import { sort } from '../../src/job/builtins/Sort.js';
import { synthetic } from '../../src/job/builtins/Synthetic.js';
import { compileChain } from '../../src/runtime/OperatorChain.js';

/** A stage as plain data: what it reads and how, its operators by kind, its sink. */
function shape(stage: StageDefinition): unknown {
  return {
    name: stage.name,
    source: stage.source?.kind,
    inputs: stage.inputs?.map((input) => ({ ...input, partitioning: input.partitioning.type })),
    operators: stage.operators?.map((op) => op.kind),
    sink: stage.sink,
    parallelism: stage.parallelism,
  };
}

/** Runs a stage's chained operators over `records` in this process. */
async function runChain(operators: readonly Operator[], records: readonly unknown[]): Promise<unknown[]> {
  const out: unknown[] = [];
  const chain = compileChain(operators, (r) => void out.push(r), async () => {});
  for (const record of records) await chain.push(record);
  await chain.end();
  return out;
}

describe('the built-in jobs, written with the builder', () => {
  test('sort: a range-partitioned stage that sorts, as before', () => {
    const job = sort({ records: 10, output: '/tmp/out' });
    expect(job.name).toBe('sort');
    expect(job.stages.map(shape)).toEqual([
      { name: 'generate', source: 'generate' },
      { name: 'sort', inputs: [{ from: 'generate', partitioning: 'range' }], operators: ['sortBy'], sink: { kind: 'text', text: '/tmp/out' } },
    ]);
    const range = job.stages[1].inputs![0].partitioning;
    expect(range.type === 'range' && range.boundaries(4)).toEqual([2 ** 29, 2 ** 30, 3 * 2 ** 29]);
    expect(range.type === 'range' && range.key([7, 'r0'])).toBe(7);
  });

  test('sort without an output collects', () => {
    expect(sort({ records: 10 }).stages[1].sink).toEqual({ kind: 'collect' });
  });

  test('join: two generated inputs hash-partitioned by customer id into a join stage, as before', async () => {
    const job = join({ customers: 4, orders: 10 });
    expect(job.stages.map(shape)).toEqual([
      { name: 'customers', source: 'generate' },
      { name: 'orders', source: 'generate' },
      {
        name: 'join',
        inputs: [
          { from: 'customers', partitioning: 'hash' },
          { from: 'orders', partitioning: 'hash' },
        ],
        operators: ['join'],
        sink: { kind: 'collect' },
      },
    ]);
    const op = job.stages[2].operators![0];
    if (!('join' in op)) throw new Error('not a join');
    expect(op.join.keys.map((key) => key([3, 'x']))).toEqual([3, 3]);
    expect(op.join.combine([3, 'c3'], [3, 42])).toEqual([3, 'c3', 42]);
  });

  test('synthetic: hash-partitioned by key, counted per task, summarized, as before', async () => {
    const job = synthetic({ records: 10, keys: 3 });
    expect(job.stages.map(shape)).toEqual([
      { name: 'generate', source: 'generate' },
      { name: 'count', inputs: [{ from: 'generate', partitioning: 'hash' }], operators: ['aggregate', 'map'], sink: { kind: 'collect' } },
    ]);
    const records = [{ key: 0, payload: '' }, { key: 2, payload: '' }, { key: 2, payload: '' }];
    expect(await runChain(job.stages[1].operators!, records)).toEqual([[3, 2]]);
  });

  test('combine: string keys combined into a count per key, summarized per task', async () => {
    const job = keyedCombine({ records: 10, keys: 3 });
    expect(job.stages.map(shape)).toEqual([
      { name: 'generate', source: 'generate' },
      { name: 'count', inputs: [{ from: 'generate', partitioning: 'hash' }], operators: ['combineByKey', 'aggregate'], sink: { kind: 'collect' } },
    ]);
    const combiners = [['k0', 4], ['k1', 3], ['k0', 1]];
    expect(await runChain(job.stages[1].operators!, combiners)).toEqual([[8, 2]]);
  });

  test.each([
    ['sort', sort({ records: 10 })],
    ['join', join({})],
    ['synthetic', synthetic({})],
    ['combine', keyedCombine({})],
  ])('%s passes validation', (_, job: JobDefinition) => {
    expect(validateJob(job, 4).length).toBe(job.stages.length);
  });
});

describe('the builder', () => {
  test('a word count: a text source, a flatMap with emit, keyBy and combine, a text sink', async () => {
    const job = new JobBuilder('wc');
    job
      .readText('/corpus')
      .flatMap<string>((line, emit) => line.split(' ').forEach(emit))
      .name('tokenize')
      .keyBy((word) => word)
      .combine({ create: () => 1, merge: (n) => n + 1, mergeCombiners: (a, b) => a + b })
      .name('count')
      .writeText('/out');
    const definition = job.build();
    expect(definition.stages.map(shape)).toEqual([
      { name: 'tokenize', source: 'text', operators: ['flatMap'] },
      { name: 'count', inputs: [{ from: 'tokenize', partitioning: 'hash' }], operators: ['combineByKey'], sink: { kind: 'text', text: '/out' } },
    ]);
    expect(definition.stages[0].source).toEqual({ kind: 'text', text: '/corpus' });
    expect(await runChain(definition.stages[0].operators!, ['a b', 'c'])).toEqual(['a', 'b', 'c']);
    const op = definition.stages[1].operators![0];
    if (!('combineByKey' in op)) throw new Error('not a combine');
    expect([op.combineByKey.key('w'), op.combineByKey.create('w'), op.combineByKey.merge(2, 'w'), op.combineByKey.mergeCombiners(2, 3)]).toEqual(['w', 1, 3, 5]);
    expect(validateJob(definition, 2).map((s) => s.name)).toEqual(['tokenize', 'count']);
  });

  test('unnamed stages are named after their first step, numbered when it repeats, around the names given', () => {
    const job = new JobBuilder('names');
    const a = job.generate(() => [1]);
    const b = job.generate(() => [2]).name('generate');
    a.rebalance().collect();
    b.rebalance().name('rebalance-2').collect();
    expect(job.build().stages.map((s) => s.name)).toEqual(['generate-2', 'generate', 'rebalance', 'rebalance-2']);
  });

  test('chained operators stay in one stage, each exchange starts a new one', async () => {
    const job = new JobBuilder('chain');
    job
      .generate(() => [1, 2, 3, 4])
      .map((n) => n * 10)
      .filter((n) => n > 10)
      .forward()
      .sortBy((n) => -n)
      .broadcast()
      .aggregate(() => 0, (sum, n) => sum + n)
      .collect();
    const stages = job.build().stages;
    expect(stages.map(shape)).toEqual([
      { name: 'generate', source: 'generate', operators: ['map', 'filter'] },
      { name: 'forward', inputs: [{ from: 'generate', partitioning: 'forward' }], operators: ['sortBy'] },
      { name: 'broadcast', inputs: [{ from: 'forward', partitioning: 'broadcast' }], operators: ['aggregate'], sink: { kind: 'collect' } },
    ]);
    expect(await runChain(stages[0].operators!, [1, 2, 3])).toEqual([20, 30]);
    expect(await runChain(stages[1].operators!, [1, 3, 2])).toEqual([3, 2, 1]);
    expect(await runChain(stages[2].operators!, [1, 3, 2])).toEqual([6]);
  });

  test('a keyed reduce is the first operator of its stage, hash-partitioned by the same key', async () => {
    const job = new JobBuilder('reduce');
    job
      .generate((): [string, number][] => [])
      .keyBy((r) => r[0])
      .reduce((a, b) => [a[0], a[1] + b[1]])
      .collect();
    const [, stage] = job.build().stages;
    expect(shape(stage)).toEqual({ name: 'reduce', inputs: [{ from: 'generate', partitioning: 'hash' }], operators: ['reduceByKey'], sink: { kind: 'collect' } });
    const partitioning = stage.inputs![0].partitioning;
    expect(partitioning.type === 'hash' && partitioning.key(['k', 1])).toBe('k');
    expect(await runChain(stage.operators!, [['a', 1], ['b', 2], ['a', 3]])).toEqual([['a', 4], ['b', 2]]);
  });

  test('the exchange type, compression and parallelism given are written on the edge and the stage', () => {
    const job = new JobBuilder('edges');
    job
      .generate(() => [1])
      .parallelism(2)
      .rebalance({ exchange: 'blocking', compression: true })
      .parallelism(3)
      .partitionByHash((n) => n, { exchange: 'sort-merge' })
      .partitionByRange((n) => n, () => [], { exchange: 'my-plugin-type' })
      .collect();
    expect(job.build().stages.map(shape)).toEqual([
      { name: 'generate', source: 'generate', parallelism: 2 },
      { name: 'rebalance', inputs: [{ from: 'generate', partitioning: 'rebalance', exchange: 'blocking', compression: true }], parallelism: 3 },
      { name: 'hash', inputs: [{ from: 'rebalance', partitioning: 'hash', exchange: 'sort-merge' }] },
      { name: 'range', inputs: [{ from: 'hash', partitioning: 'range', exchange: 'my-plugin-type' }], sink: { kind: 'collect' } },
    ]);
  });

  test('one stage may feed several exchanges', () => {
    const job = new JobBuilder('fan-out');
    const numbers = job.generate(() => [1]);
    numbers.rebalance().collect();
    numbers.forward().writeText('/out');
    const stages = job.build().stages;
    expect(stages.map((s) => s.inputs?.[0].from)).toEqual([undefined, 'generate', 'generate']);
    expect(validateJob(job.build(), 1).length).toBe(3);
  });

  test('continuing a stream whose stage already feeds an exchange is refused, and the error says to branch with forward()', () => {
    const job = new JobBuilder('branch');
    const numbers = job.generate(() => [1]);
    numbers.rebalance().collect();
    expect(() => numbers.map((n) => n + 1)).toThrow(InvalidJobError);
    expect(() => numbers.map((n) => n + 1)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB', message: expect.stringContaining('.forward()') }));
  });

  test('continuing one stream twice with chained operators is refused', () => {
    const job = new JobBuilder('twice');
    const numbers = job.generate(() => [1]).name('numbers');
    numbers.map((n) => n + 1);
    expect(() => numbers.filter((n) => n > 0)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB', message: expect.stringContaining('.forward()') }));
    expect(() => numbers.rebalance()).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
  });

  test('a stage that ends in a sink feeds nothing more', () => {
    const job = new JobBuilder('sunk');
    const numbers = job.generate(() => [1]);
    numbers.collect();
    expect(() => numbers.rebalance()).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
    expect(() => numbers.writeText('/out')).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
  });

  test('a join of keyed streams from two builders is refused', () => {
    const left = new JobBuilder('a').generate(() => [1]).keyBy((n) => n);
    const right = new JobBuilder('b').generate(() => [2]).keyBy((n) => n);
    expect(() => left.join(right, (l, r) => l + r)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
  });

  test('filter with a type guard narrows the record type', async () => {
    const job = new JobBuilder('guard');
    const narrowed = job.generate((): (string | number)[] => ['a', 1]).filter((r): r is string => typeof r === 'string');
    narrowed.map((s) => s.toUpperCase()).collect();
    expect(await runChain(job.build().stages[0].operators!, ['a', 1, 'b'])).toEqual(['A', 'B']);
  });
});

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  foldPartitions,
  JobBuilder,
  MAX_SPILL_DEPTH,
  SPILL_PARTITIONS,
  spillPartition,
  validateJob,
  type OperatorKind,
  type OperatorMemory,
  type OperatorOf,
  type RecordSink,
  type SpillingFold,
  type SpillOutput,
  type StageDefinition,
  type StageInput,
} from '../../src/index.js';
import type { Operator } from '../../src/job/JobDefinition.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { channelForKey } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { combining } from '../../src/runtime/Chain.js';
import { edgePlan } from '../../src/runtime/EdgePlan.js';
import { compileChain } from '../../src/runtime/OperatorChain.js';
import { runLocalJob } from '../helpers/localJob.js';
import { normalizeOperator, OPERATOR_KINDS, operatorSpec } from '../../src/runtime/operators/Operators.js';
import { tumbling } from '../../src/runtime/windows/WindowAssigner.js';
import { ManagedMemory } from '../../src/runtime/memory/ManagedMemory.js';

type Pair = [number, number];
const first = (r: unknown): unknown => (r as Pair)[0];
const sumPairs = (a: unknown, b: unknown): Pair => [(a as Pair)[0], (a as Pair)[1] + (b as Pair)[1]];

/** One operator of every registered kind; a new kind must add one (the type says so). */
const SAMPLES: { [K in OperatorKind]: OperatorOf<K> } = {
  map: { kind: 'map', map: (r) => r },
  flatMap: { kind: 'flatMap', flatMap: (r) => [r] },
  filter: { kind: 'filter', filter: () => true },
  aggregate: { kind: 'aggregate', aggregate: { zero: () => 0, add: (a) => a } },
  accumulate: { kind: 'accumulate', accumulate: { create: () => 0, add: () => {}, emit: () => [] } },
  reduceByKey: { kind: 'reduceByKey', reduceByKey: { key: first, reduce: sumPairs } },
  combineByKey: { kind: 'combineByKey', combineByKey: { key: first, create: (r) => r, merge: (c) => c, mergeCombiners: (a) => a } },
  sortBy: { kind: 'sortBy', sortBy: { key: first } },
  join: { kind: 'join', join: { keys: [first, first], combine: (a) => a } },
  fold: { kind: 'fold', fold: () => ({ push: () => {}, finish: async () => {} }) },
  assignTimestamps: { kind: 'assignTimestamps', assignTimestamps: { timestamp: () => 0 } },
  process: { kind: 'process', process: { key: first, fn: { processElement: () => {} } } },
  coProcess: { kind: 'coProcess', coProcess: { keys: [first, first], fn: { processElement1: () => {}, processElement2: () => {} } } },
  window: { kind: 'window', window: { key: first, assigner: tumbling(10), aggregate: { create: () => 0, add: (a) => a, merge: (a) => a, result: (a) => a } } },
  windowJoin: { kind: 'windowJoin', windowJoin: { keys: [first, first], assigner: tumbling(10), combine: (a) => a } },
};

const rebalance = (from: string): StageInput => ({ from, partitioning: { type: 'rebalance' } });

/** A job of a stage `s` reading `inputs` through `operators`, and the sources they name. */
function jobOf(inputs: StageInput[], operators: unknown[]): Parameters<typeof validateJob>[0] {
  // In event time, so that the operators that need it (windows) may stand where their placement says.
  const sources = [...new Set(inputs.map((input) => input.from))].map((name): StageDefinition => ({ name, source: { kind: 'generate', generate: () => [] }, operators: [SAMPLES.assignTimestamps] }));
  return { name: 'j', stages: [...sources, { name: 's', inputs, operators: operators as Operator[], sink: { kind: 'collect' } }] };
}

const invalidJob = (message?: string | RegExp): unknown =>
  expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB', ...(message === undefined ? {} : { message: typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message) }) });

describe('operator specs', () => {
  test('every kind has a spec that compiles it into the chain or reads its stage\'s inputs (one by one or together), one of the three', () => {
    expect(OPERATOR_KINDS.sort()).toEqual(Object.keys(SAMPLES).sort());
    for (const kind of OPERATOR_KINDS) {
      const spec = operatorSpec(SAMPLES[kind]);
      expect(spec.kind).toBe(kind);
      expect(spec.validate(SAMPLES[kind] as never), kind).toBeUndefined();
      expect([spec.compile, spec.readInputs, spec.compileInputs].filter((f) => f !== undefined), kind).toHaveLength(1);
    }
  });

  test.each(OPERATOR_KINDS.filter((kind) => operatorSpec(SAMPLES[kind]).placement !== 'anywhere'))(
    '%s stands only where its placement says: elsewhere the job is refused with SPW_ERR_INVALID_JOB',
    (kind) => {
      const placement = operatorSpec(SAMPLES[kind]).placement;
      if (placement === 'anywhere') throw new Error('filtered out');
      const { inputs: count, partitioning } = placement.first;
      // Hash-partitioned inputs fit every placement of the registered kinds.
      const fitting: StageInput[] = Array.from({ length: count }, (_, i) => ({ from: i === 0 ? 'a' : 'b', partitioning: { type: 'hash', key: first } }));
      expect(validateJob(jobOf(fitting, [SAMPLES[kind]]), 2).at(-1)!.operators).toEqual([SAMPLES[kind]]);
      // Not first: after a map, in a stage whose inputs fit.
      expect(() => validateJob(jobOf(fitting, count > 1 ? [SAMPLES.join, SAMPLES[kind]] : [SAMPLES.map, SAMPLES[kind]]), 2)).toThrow(invalidJob(`${kind} must be the first operator`));
      // First, but of one input too many.
      expect(() => validateJob(jobOf([...fitting, { ...fitting[0], from: 'b' }], [SAMPLES[kind]]), 2)).toThrow(invalidJob(`${kind} must be the first operator`));
      if (partitioning !== undefined) {
        const other = fitting.map((input) => ({ ...input, ...rebalance(input.from) }));
        expect(() => validateJob(jobOf(other, [SAMPLES[kind]]), 2)).toThrow(invalidJob(`${partitioning}-partitioned`));
      }
    },
  );

  test.each(OPERATOR_KINDS.filter((kind) => operatorSpec(SAMPLES[kind]).placement === 'anywhere'))('%s may stand anywhere in a stage of one input', (kind) => {
    expect(() => validateJob(jobOf([rebalance('a')], [SAMPLES.map, SAMPLES[kind], SAMPLES.map]), 2)).not.toThrow();
    expect(() => validateJob(jobOf([rebalance('a'), rebalance('b')], [SAMPLES[kind]]), 2)).toThrow(invalidJob('only a join reads more than one'));
  });

  test.each([
    ['a kind of no spec', { kind: 'explode', explode: () => [] }],
    ['a key-only shape of no kind', { explode: () => [] }],
    ['two kinds\' keys at once', { map: (r: unknown) => r, filter: () => true }],
    ['no object', 42],
  ])('%s is refused with SPW_ERR_INVALID_JOB naming every known kind', (_, op) => {
    const refusal = (): unknown => validateJob(jobOf([rebalance('a')], [op]), 1);
    expect(refusal).toThrow(invalidJob('stage "s": unknown operator'));
    for (const kind of OPERATOR_KINDS) expect(refusal).toThrow(invalidJob(kind));
  });

  test('a field that is not a function is refused with SPW_ERR_INVALID_JOB naming it', () => {
    const bad = { kind: 'reduceByKey', reduceByKey: { key: first, reduce: 'sum' } };
    expect(() => validateJob(jobOf([rebalance('a')], [bad]), 1)).toThrow(invalidJob('operator 0 (reduceByKey) needs a function reduceByKey.reduce, not string'));
  });
});

describe('the old key-only shape', () => {
  const keyOnly = [
    { flatMap: (line: unknown) => (line as string).split(' ') },
    { filter: (w: unknown) => (w as string).length > 0 },
    { map: (w: unknown) => [w, 1] },
    { reduceByKey: { key: first, reduce: sumPairs } },
    { sortBy: { key: first } },
  ];

  async function run(operators: unknown[]): Promise<unknown[]> {
    const stage = validateJob(jobOf([rebalance('a')], operators), 1).find((s) => s.name === 's')!;
    const out: unknown[] = [];
    const chain = compileChain(stage.operators!, (r) => void out.push(r), async () => {});
    for (const line of ['b a', 'c  a', 'b', 'a']) await chain.push(line);
    await chain.end();
    return out;
  }

  test('is given its kind on validation, the rest of the operator as it was', () => {
    const normalized = validateJob(jobOf([rebalance('a')], [keyOnly[2]]), 1).find((s) => s.name === 's')!;
    expect(normalized.operators).toEqual([{ kind: 'map', map: keyOnly[2].map }]);
    expect(normalizeOperator(SAMPLES.map)).toBe(SAMPLES.map);
  });

  test('compiles to the same results as the kind shape', async () => {
    const withKind = keyOnly.map((op) => ({ kind: Object.keys(op)[0], ...op }));
    const expected = [['a', 3], ['b', 2], ['c', 1]];
    expect(await run(keyOnly)).toEqual(expected);
    expect(await run(withKind)).toEqual(expected);
  });
});

describe('the map-side combine', () => {
  /** Runs a two-stage job in this process: producer chains, the edge as edgePlan says (combine, routing), consumer chains. */
  async function runTwoStages(stages: StageDefinition[], inputs: unknown[][], parallelism: number): Promise<{ out: unknown[]; shipped: number }> {
    const [producer, consumer] = stages;
    const { routing, combiner } = edgePlan(consumer, 0);
    if (routing.type !== 'hash') throw new Error('a hash edge');
    const exchanged: unknown[][] = Array.from({ length: parallelism }, () => []);
    let shipped = 0;
    const ship = (r: unknown): void => {
      shipped++;
      exchanged[channelForKey(routing.key(r), parallelism)].push(r);
    };
    for (const records of inputs) {
      const edge = combiner ? combining(combiner, ship, async () => {}) : { push: ship, end: async () => {} };
      const chain = compileChain(producer.operators ?? [], edge.push, () => edge.end());
      for (const r of records) await chain.push(r);
      await chain.end();
    }
    const out: unknown[] = [];
    for (const records of exchanged) {
      const chain = compileChain(consumer.operators!, (r) => void out.push(r), async () => {});
      for (const r of records) await chain.push(r);
      await chain.end();
    }
    return { out, shipped };
  }

  test('applies after an accumulate too: a reduceByKey downstream gets its records combined, with exact results', async () => {
    const job = new JobBuilder('combine-after-accumulate');
    job
      .generate(() => [])
      .accumulate<number[], Pair>({
        create: () => [],
        add: (held, r: number) => void held.push(r),
        emit: (held) => held.map((r): Pair => [r % 10, r]),
      })
      .keyBy(([k]) => k)
      .reduce(([k, a], [, b]) => [k, a + b])
      .collect();
    const stages = validateJob(job.build(), 3);
    expect(edgePlan(stages[1], 0).combiner, 'a combiner after an accumulate').toBeDefined();
    const random = seededRandom(7);
    const inputs = Array.from({ length: 3 }, () => Array.from({ length: 2000 }, () => Math.floor(random() * 1000)));
    const { out, shipped } = await runTwoStages(stages, inputs, 3);
    const expected = new Map<number, number>();
    for (const r of inputs.flat()) expected.set(r % 10, (expected.get(r % 10) ?? 0) + r);
    expect(new Map(out as Pair[])).toEqual(expected);
    expect(out).toHaveLength(10);
    expect(shipped, 'one record per key per producer').toBe(30);
  });

  test('is none where the consumer\'s first operator offers none, or its input is not hash-partitioned', () => {
    const stage = (operators: Operator[], partitioning: StageInput['partitioning']): StageDefinition => ({ name: 's', inputs: [{ from: 'a', partitioning }], operators });
    expect(edgePlan(stage([SAMPLES.fold], { type: 'hash', key: first }), 0).combiner).toBeUndefined();
    expect(edgePlan(stage([SAMPLES.reduceByKey], { type: 'rebalance' }), 0).combiner).toBeUndefined();
    expect(edgePlan(stage([SAMPLES.reduceByKey], { type: 'hash', key: first }), 0).combiner).toBeDefined();
  });
});

/**
 * A user's spilling keyed sum over [key, n] pairs, written only with what the package
 * exports: a Map within its budget (counted at a fixed 64 bytes a key), spilled by key
 * partition past it, each partition summed at the end by a fold of the level below.
 */
class SpillingSum implements SpillingFold<Pair, Pair> {
  private table = new Map<number, number>();
  private writers: SpillOutput[] | null = null;
  spills = 0;
  deepest = 0;

  constructor(
    private readonly memory: OperatorMemory,
    private readonly depth = 0,
  ) {}

  push([key, n]: Pair): void {
    this.table.set(key, (this.table.get(key) ?? 0) + n);
    if (this.table.size * 64 > this.memory.operatorBudget && this.depth < MAX_SPILL_DEPTH) this.spill();
  }

  async finish(emit: RecordSink<Pair>): Promise<void> {
    if (this.writers === null) {
      for (const pair of this.table) await emit(pair);
      return;
    }
    this.spill();
    const deepest = await foldPartitions(this.writers, () => new SpillingSum(this.memory, this.depth + 1), emit, this.memory.checkpoint);
    if (deepest !== null) this.deepest = Math.max(deepest, this.depth + 1);
  }

  private spill(): void {
    this.writers ??= Array.from({ length: SPILL_PARTITIONS }, () => this.memory.newSpillWriter('sum', 4096));
    for (const [key, n] of this.table) this.writers[spillPartition(key, this.depth)].add([key, n]);
    this.memory.released(this.table.size * 64);
    this.table = new Map();
    this.spills++;
  }
}

describe('composite keys', () => {
  /** Records of the form a stage's key function reads, generated by subtask. */
  const generated = (records: (subtask: number) => unknown[]): StageDefinition => ({ name: 'gen', source: { kind: 'generate', generate: (subtask: number) => records(subtask) } });

  test('an array or an object as a key is one key whatever object each record brings: reduceByKey, combineByKey and join are exact', async () => {
    // Each record makes its key anew, as a key function does: never the same object twice.
    const pairs = (subtask: number): unknown[] => Array.from({ length: 300 }, (_, i) => [[(i + subtask) % 3, 'k'], 1]);
    const reduce = await runLocalJob(
      {
        name: 'reduce-by-array',
        stages: [
          generated(pairs),
          {
            name: 'sum',
            inputs: [{ from: 'gen', partitioning: { type: 'hash', key: (r) => (r as Pair)[0] } }],
            operators: [{ kind: 'reduceByKey', reduceByKey: { key: (r) => (r as Pair)[0], reduce: (a, b) => [(a as Pair)[0], (a as number[])[1] + (b as number[])[1]] } }],
            sink: { kind: 'collect' },
          },
        ],
      },
      { parallelism: 2 },
    );
    expect(reduce.collected.get('sum')!.flat().sort()).toEqual([
      [[0, 'k'], 200],
      [[1, 'k'], 200],
      [[2, 'k'], 200],
    ]);
    const combine = await runLocalJob(
      {
        name: 'combine-by-object',
        stages: [
          generated((subtask) => Array.from({ length: 500 }, (_, i) => 2 * i + subtask)),
          {
            name: 'count',
            inputs: [{ from: 'gen', partitioning: { type: 'hash', key: (r) => ({ even: (r as number) % 2 === 0 }) } }],
            operators: [{ kind: 'combineByKey', combineByKey: { key: (r) => ({ even: (r as number) % 2 === 0 }), create: () => 1, merge: (c) => (c as number) + 1, mergeCombiners: (a, b) => (a as number) + (b as number) } }],
            sink: { kind: 'collect' },
          },
        ],
      },
      { parallelism: 2 },
    );
    expect(combine.collected.get('count')!.flat()).toEqual(expect.arrayContaining([[{ even: true }, 500], [{ even: false }, 500]]));
    expect(combine.collected.get('count')!.flat()).toHaveLength(2);
    const join = await runLocalJob(
      {
        name: 'join-on-arrays',
        stages: [
          { name: 'left', source: { kind: 'generate', generate: (subtask: number) => (subtask === 0 ? Array.from({ length: 10 }, (_, i) => ['L', i]) : []) } },
          { name: 'right', source: { kind: 'generate', generate: (subtask: number) => (subtask === 0 ? Array.from({ length: 10 }, (_, i) => ['R', i]) : []) } },
          {
            name: 'joined',
            inputs: [
              { from: 'left', partitioning: { type: 'hash', key: (r) => [(r as Pair)[1] as number % 5, 'j'] } },
              { from: 'right', partitioning: { type: 'hash', key: (r) => [(r as Pair)[1] as number % 5, 'j'] } },
            ],
            operators: [{ kind: 'join', join: { keys: [(r) => [(r as Pair)[1] as number % 5, 'j'], (r) => [(r as Pair)[1] as number % 5, 'j']], combine: (l, r) => [(l as Pair)[1], (r as Pair)[1]] } }],
            sink: { kind: 'collect' },
          },
        ],
      },
      { parallelism: 2 },
    );
    const joined = join.collected.get('joined')!.flat() as [number, number][];
    const expected: [number, number][] = [];
    for (let l = 0; l < 10; l++) for (let r = 0; r < 10; r++) if (l % 5 === r % 5) expected.push([l, r]);
    expect(joined.sort((a, b) => a[0] - b[0] || a[1] - b[1])).toEqual(expected);
  });
});

describe('a user-defined fold', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-fold-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('spills within a small budget, gives exact results, and leaves no spill file', async () => {
    const folds: SpillingSum[] = [];
    const job = new JobBuilder('sum');
    job
      .generate((): Pair[] => [])
      .partitionByHash(([k]) => k)
      .fold((memory) => {
        const fold = new SpillingSum(memory);
        folds.push(fold);
        return fold;
      })
      .collect();
    const [, sum] = validateJob(job.build(), 1);
    const memory = new ManagedMemory(16 << 10, path.join(dir, 'task'));
    expect(memory.operatorBudget).toBe(16 << 10);
    const out: Pair[] = [];
    const chain = compileChain(sum.operators!, (r) => void out.push(r as Pair), async () => {}, memory);
    const random = seededRandom(3);
    const expected = new Map<number, number>();
    for (let i = 0; i < 50_000; i++) {
      const pair: Pair = [Math.floor(random() * 5000), Math.floor(random() * 100)];
      expected.set(pair[0], (expected.get(pair[0]) ?? 0) + pair[1]);
      await chain.push(pair);
    }
    await chain.end();
    expect(folds).toHaveLength(1);
    expect(folds[0].spills, 'times it spilled').toBeGreaterThan(1);
    expect(memory.spilledBytes).toBeGreaterThan(0);
    expect(out).toHaveLength(expected.size);
    expect(new Map(out)).toEqual(expected);
    expect(fs.readdirSync(path.join(dir, 'task')), 'spill files left').toEqual([]);
  });
});

/**
 * Managed memory (issue 13): operators that hold data, run on 2 TaskManagers of 2 slots
 * at parallelism 4 with files out, each checked exactly by a streaming verifier, with
 * every TaskManager's peak RSS beside its budget (network + managed memory + 200 MiB).
 * - sort: the built-in sort with managed memory holding everything, then with a quarter
 *   of each TaskManager's data (it spills about 4x its budget), each in a fresh cluster
 *   (peak RSS is since the process started); the time of the second within 2x the first.
 * - join: the built-in join, a build side about 4x each slot's budget.
 * - aggregation: reduceByKey over many distinct keys (bench/jobs/distinct-keys.mjs).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Packr } from 'msgpackr';
import { orderCustomer } from '../src/job/builtins/Join.js';
import { scanPartFiles } from '../src/job/builtins/PartFiles.js';
import { checkSortOutput, sortInput } from '../src/job/builtins/Sort.js';
import { SLOTS, TASK_MANAGERS, withCluster, type BenchCluster, type TaskManagerMemory } from './cluster.js';
import { formatCount, MiB } from './measure.js';
import { packageRoot } from './results.js';
import type { Row, Target } from './suite.js';

export interface ManagedSizes {
  sortRecords: number;
  joinCustomers: number;
  joinOrders: number;
  /** Managed memory of a slot in the join and the aggregation. */
  slotBudget: number;
  aggregationKeys: number;
  aggregationRecords: number;
}

export const MANAGED_QUICK: ManagedSizes = { sortRecords: 200_000, joinCustomers: 50_000, joinOrders: 200_000, slotBudget: 512 << 10, aggregationKeys: 100_000, aggregationRecords: 125_000 };

/**
 * Issue 13's sizes: a sort of 50 M records (twice: a budget that holds them, and a
 * quarter of each TaskManager's data), a join of 5 M x 20 M and an aggregation over 20 M
 * keys (25 M records) with 64 MiB a slot. On a 2-core machine the four jobs take about
 * 3.5-4 minutes with their checks, of the 10 the whole bench may take.
 */
export const MANAGED_FULL: ManagedSizes = { sortRecords: 50_000_000, joinCustomers: 5_000_000, joinOrders: 20_000_000, slotBudget: 64 * MiB, aggregationKeys: 20_000_000, aggregationRecords: 25_000_000 };

/** The memory bound of issue 13: peak RSS at most network memory + managed memory + this. */
const RSS_HEADROOM = 200 * MiB;
/** The spilling sort gets this fraction of its data as managed memory. */
const SORT_DATA_PER_BUDGET = 4;

export interface ManagedRun {
  job: string;
  records: number;
  seconds: number;
  recordsPerSec: number;
  /** Serialized bytes that crossed the exchanges. */
  bytes: number;
  spilledBytes: number;
  /** Managed memory of each TaskManager, bytes. */
  managedMemory: number;
  /** The first fault the verifier found, or null: exact. */
  fault: string | null;
  taskManagers: TaskManagerMemory[];
}

export interface ManagedFigures {
  sortInMemory?: ManagedRun;
  sortSpilling?: ManagedRun;
  join?: ManagedRun;
  aggregation?: ManagedRun;
}

type Attempt = (part: string, measure: () => Promise<void>) => Promise<void>;

export async function measureManaged(sizes: ManagedSizes, figures: ManagedFigures, attempt: Attempt): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-managed-'));
  try {
    const records = sizes.sortRecords;
    const dataPerTm = packedBytes(records) / TASK_MANAGERS;
    const spillingBudget = Math.ceil(dataPerTm / SORT_DATA_PER_BUDGET);
    // Room for every record held at once: packed bytes and the sort's 32 bytes an entry, twice over.
    const holdingBudget = Math.ceil(2 * (dataPerTm + (32 * records) / TASK_MANAGERS));
    await attempt(`managed memory: sort ${formatCount(records)} records, a budget that holds them`, async () => {
      figures.sortInMemory = await runSort(work, records, holdingBudget);
    });
    await attempt(`managed memory: sort ${formatCount(records)} records, ${size(spillingBudget)} a TaskManager (data ${SORT_DATA_PER_BUDGET}x)`, async () => {
      figures.sortSpilling = await runSort(work, records, spillingBudget);
    });
    // Each in a cluster of its own: peak RSS is since the process started.
    await attempt(`managed memory: join ${formatCount(sizes.joinCustomers)} x ${formatCount(sizes.joinOrders)}, ${size(sizes.slotBudget)} a slot`, async () => {
      figures.join = await withManaged(sizes.slotBudget * SLOTS, (cluster) => runJoin(cluster, work, sizes));
    });
    await attempt(`managed memory: reduceByKey over ${formatCount(sizes.aggregationKeys)} keys, ${size(sizes.slotBudget)} a slot`, async () => {
      figures.aggregation = await withManaged(sizes.slotBudget * SLOTS, (cluster) => runAggregation(cluster, work, sizes));
    });
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The packed bytes of the sort job's records, from a sample packed as the operators pack them. */
function packedBytes(records: number): number {
  const packr = new Packr();
  let bytes = 0;
  let n = 0;
  for (const record of sortInput(Math.min(records, 100_000), 1)) {
    bytes += packr.pack(record).length;
    n++;
  }
  return (bytes / n) * records;
}

async function withManaged<T>(managedMemory: number, use: (cluster: BenchCluster) => Promise<T>): Promise<T> {
  return withCluster({ managedMemory: `${managedMemory}` }, use);
}

async function timed(cluster: BenchCluster, job: string, params: Record<string, unknown>, records: number, managedMemory: number, module?: string): Promise<Omit<ManagedRun, 'fault'>> {
  const status = await cluster.run(module ? { module, params } : { job, params });
  const seconds = status.seconds;
  return {
    job,
    records,
    seconds,
    recordsPerSec: records / seconds,
    bytes: status.counters.bytesOut,
    spilledBytes: status.counters.spilledBytes,
    managedMemory,
    taskManagers: await cluster.memory(),
  };
}

async function runSort(work: string, records: number, managedMemory: number): Promise<ManagedRun> {
  const output = path.join(work, 'sorted');
  fs.rmSync(output, { recursive: true, force: true });
  const run = await withManaged(managedMemory, (cluster) => timed(cluster, 'sort', { records, seed: 1, output }, records, managedMemory));
  const fault = checkSortOutput(output, records, 1, SLOTS * TASK_MANAGERS);
  fs.rmSync(output, { recursive: true, force: true });
  return { ...run, fault };
}

async function runJoin(cluster: BenchCluster, work: string, sizes: ManagedSizes): Promise<ManagedRun> {
  const output = path.join(work, 'joined');
  const params = { customers: sizes.joinCustomers, orders: sizes.joinOrders, output };
  const run = await timed(cluster, 'join', params, sizes.joinCustomers + sizes.joinOrders, sizes.slotBudget * SLOTS);
  const fault = checkJoinOutput(output, sizes.joinCustomers, sizes.joinOrders);
  fs.rmSync(output, { recursive: true, force: true });
  return { ...run, fault };
}

async function runAggregation(cluster: BenchCluster, work: string, sizes: ManagedSizes): Promise<ManagedRun> {
  const output = path.join(work, 'counts');
  const params = { records: sizes.aggregationRecords, keys: sizes.aggregationKeys, output };
  const module = await cluster.upload(fs.readFileSync(path.join(packageRoot(), 'bench', 'jobs', 'distinct-keys.mjs'), 'utf8'));
  const run = await timed(cluster, 'reduceByKey', params, sizes.aggregationRecords, sizes.slotBudget * SLOTS, module);
  const fault = checkAggregationOutput(output, sizes.aggregationRecords, sizes.aggregationKeys);
  fs.rmSync(output, { recursive: true, force: true });
  return { ...run, fault };
}

/** Every order that has a customer comes out once, as [id, "c<id>", amount] with its customer; no other line. */
function checkJoinOutput(dir: string, customerCount: number, orderCount: number): string | null {
  const seen = new Uint8Array(orderCount);
  let lines = 0;
  const fault = scanPartFiles(dir, ([id, name, amount], file) => {
    if (!(amount < orderCount) || seen[amount]++ !== 0) return `${file}: order ${amount} is not one of the job's or joined twice`;
    if (id !== orderCustomer(amount, customerCount) || id >= customerCount || name !== id) return `${file}: order ${amount} joined with customer ${id} (c${name})`;
    lines++;
    return null;
  });
  if (fault !== null) return fault;
  let expected = 0;
  for (let j = 0; j < orderCount; j++) if (orderCustomer(j, customerCount) < customerCount) expected++;
  return lines === expected ? null : `${lines} joined records, not ${expected}`;
}

/** Each key once, with the count of the records that have it (record i has key i mod keys). */
function checkAggregationOutput(dir: string, records: number, keys: number): string | null {
  const seen = new Uint8Array(keys);
  let lines = 0;
  const fault = scanPartFiles(dir, ([key, count], file) => {
    if (!(key < keys) || seen[key]++ !== 0) return `${file}: key ${key} is not one of the job's or comes twice`;
    const expected = Math.floor((records - 1 - key) / keys) + 1;
    if (count !== expected) return `${file}: key ${key} counted ${count}, not ${expected}`;
    lines++;
    return null;
  });
  return fault ?? (lines === Math.min(keys, records) ? null : `${lines} keys, not ${Math.min(keys, records)}`);
}

/** The rows of the table for these figures; targets: exact, within the memory bound, the spilling sort within 2x the time. */
export function managedRows(figures: ManagedFigures, rows: Row[], target: Target): void {
  const { sortInMemory: holding, sortSpilling: spilling, join, aggregation } = figures;
  rows.push({
    figure: `managed memory: sort ${holding ? formatCount(holding.records) : '?'} records, a budget that holds them (baseline)`,
    measured: holding ? measured(holding) : 'error',
    rss: holding && rssCell(holding),
  });
  const slowdown = holding && spilling ? spilling.seconds / holding.seconds : null;
  rows.push({
    ...runRow(`sort, data ${SORT_DATA_PER_BUDGET}x the budget`, spilling, target, slowdown !== null && slowdown <= 2),
    baseline: holding ? `in memory ${holding.seconds.toFixed(1)} s` : 'error',
    ratio: slowdown === null ? '' : `${slowdown.toFixed(2)}x the time`,
    target: 'exact, RSS <= bound, <= 2x the time',
  });
  rows.push(runRow(`join ${join ? `${formatCount(join.records)} records in all` : ''}`, join, target));
  rows.push(runRow('reduceByKey over distinct keys', aggregation, target));
}

/** A row whose target is an exact result within the memory bound, and `alsoPass`. */
function runRow(name: string, run: ManagedRun | undefined, target: Target, alsoPass = true): Row {
  const worst = run ? Math.max(...run.taskManagers.map((tm) => tm.peakRss / bound(run, tm))) : null;
  const pass = run !== undefined && run.fault === null && worst !== null && worst <= 1 && alsoPass;
  return {
    figure: `managed memory: ${name}${run ? `, ${size(run.managedMemory)} managed a TaskManager, ${size(run.spilledBytes)} spilled` : ''}`,
    measured: run ? measured(run) : 'error',
    target: 'exact, RSS <= bound',
    result: target(`managed memory: ${name}: exact, peak RSS <= network + managed memory + 200 MiB`, worst, pass),
    rss: run && rssCell(run),
  };
}

function measured(run: ManagedRun): string {
  const exact = run.fault === null ? 'exact' : `NOT exact: ${run.fault}`;
  return `${formatCount(run.recordsPerSec)} rec/s, ${(run.bytes / run.seconds / 1e6).toFixed(1)} MB/s shuffled (${run.seconds.toFixed(1)} s), ${exact}`;
}

function rssCell(run: ManagedRun): string {
  return `${run.taskManagers.map((tm) => `${tm.id} ${(tm.peakRss / MiB).toFixed(0)}`).join(', ')} MiB of ${(bound(run, run.taskManagers[0]) / MiB).toFixed(0)}`;
}

/** Issue 13's bound on a TaskManager's peak RSS: its network memory, its managed memory and 200 MiB. */
function bound(run: ManagedRun, tm: TaskManagerMemory): number {
  return tm.memory + run.managedMemory + RSS_HEADROOM;
}

/** 1.5 MiB, 640 KiB: sizes as --managed-memory takes them, to one decimal. */
function size(bytes: number): string {
  return bytes >= MiB ? `${(bytes / MiB).toFixed(bytes >= 100 * MiB ? 0 : 1)} MiB` : `${(bytes / 1024).toFixed(0)} KiB`;
}

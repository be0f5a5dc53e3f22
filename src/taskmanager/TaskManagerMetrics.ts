import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { executionId, type TaskCounters, type TaskDeploymentDescriptor } from '../rpc/TaskDeployment.js';
import { networkCounters } from '../network/networkThread/NetworkCounters.js';
import { DEFAULT_METRICS_RETENTION_MS } from '../ServerOptions.js';
import type { ShuffleEnvironment } from '../network/networkThread/ShuffleEnvironment.js';
import type { TaskBufferStats } from '../network/networkThread/NetworkEnd.js';

/** A task as the metrics see it: its ids, counters and buffers, read at scrape time. */
export interface MeteredTask {
  readonly descriptor: TaskDeploymentDescriptor;
  readonly counters: TaskCounters;
  bufferStats(): TaskBufferStats;
}

type TaskLabels = 'job' | 'stage' | 'subtask';
const TASK_LABELS: TaskLabels[] = ['job', 'stage', 'subtask'];
/** A task's series: its labels and its counters. */
interface TaskSeries {
  labels: Record<TaskLabels, string>;
  counters: TaskCounters;
}

/**
 * A TaskManager's /metrics (Prometheus text, prom-client): the process's default
 * metrics, its network memory, traffic and spills, and per task its records,
 * bytes and busy / backpressured / idle time. Everything is read when scraped,
 * from counters the tasks report anyway; nothing is counted per record for it.
 * An ended task's series stay for the retention, then go: labels stay bounded.
 */
export class TaskManagerMetrics {
  readonly registry = new Registry();
  /** Ended tasks' last counters, by execution (task and attempt): a restarted subtask's next attempt is another. */
  private readonly ended = new Map<string, TaskSeries & { at: number }>();

  constructor(
    private readonly env: ShuffleEnvironment,
    private readonly live: () => Iterable<MeteredTask>,
    private readonly retentionMs = DEFAULT_METRICS_RETENTION_MS,
  ) {
    collectDefaultMetrics({ register: this.registry });
    this.taskMetric('counter', 'spillway_task_busy_seconds_total', 'Time tasks spent processing records (Flink busyTime)', (c) => (c.busyMs ?? 0) / 1000);
    this.taskMetric('counter', 'spillway_task_backpressured_seconds_total', 'Time tasks waited for an output buffer (Flink backPressuredTime)', (c) => (c.backPressuredMs ?? 0) / 1000);
    this.taskMetric('counter', 'spillway_task_idle_seconds_total', 'Time tasks waited for input (Flink idleTime)', (c) => (c.idleMs ?? 0) / 1000);
    this.taskMetric('counter', 'spillway_task_records_in_total', 'Records tasks read from their inputs', (c) => c.recordsIn);
    this.taskMetric('counter', 'spillway_task_records_out_total', 'Records tasks wrote to their outputs', (c) => c.recordsOut);
    this.taskMetric('counter', 'spillway_task_bytes_in_total', 'Bytes of buffers tasks read', (c) => c.bytesIn);
    this.taskMetric('counter', 'spillway_task_bytes_out_total', 'Bytes of buffers tasks wrote', (c) => c.bytesOut);
    this.taskMetric('counter', 'spillway_task_malformed_records_total', "Records tasks' sources skipped as malformed (onError: 'skip')", (c) => c.malformedRecords ?? 0);
    this.taskMetric('counter', 'spillway_task_late_records_dropped_total', "Records tasks' windows dropped as later than their allowed lateness (unbounded jobs)", (c) => c.lateRecordsDropped ?? 0);
    this.taskMetric('gauge', 'spillway_task_watermark_milliseconds', "Tasks' current input watermark, event time in ms (unbounded jobs)", (c) => c.watermark ?? undefined);
    this.taskMetric('gauge', 'spillway_task_watermark_lag_milliseconds', "How far tasks' input watermark trails the wall clock, ms (unbounded jobs)", (c) => (c.watermark == null ? undefined : Date.now() - c.watermark));
    this.taskMetric('gauge', 'spillway_task_state_bytes', 'Bytes of state (keyed state, windows, timers) tasks hold, estimated (unbounded jobs)', (c) => c.stateBytes);
    for (const q of ['p50', 'p99'] as const) {
      this.taskMetric('gauge', `spillway_task_latency_${q}_milliseconds`, `${q} of the latency of latency markers from the sources to a sink task, ms, over its latest samples`, (c) => c.latency?.[q]);
      this.taskMetric('gauge', `spillway_task_watermark_latency_${q}_milliseconds`, `${q} of how long watermarks took from their assigner to a sink task, ms, over its latest samples`, (c) => c.watermarkLatency?.[q]);
    }
    this.networkMetrics();
  }

  /** Keeps an ended task's last counters for the retention. */
  taskEnded(task: MeteredTask): void {
    this.ended.set(executionOf(task.descriptor), { labels: labelsOf(task.descriptor), counters: task.counters, at: Date.now() });
  }

  /** The Prometheus text of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * The ended tasks still retained (the expired ones are dropped here), then the live
   * ones not among them. A subtask restarted here has its ended attempt and its live one
   * under the same labels: a counter sums them (it never goes back), a gauge keeps the
   * live one's value, set last.
   */
  private *tasks(): Iterable<TaskSeries> {
    const now = Date.now();
    for (const [id, task] of this.ended) if (now - task.at > this.retentionMs) this.ended.delete(id);
    yield* this.ended.values();
    for (const task of this.live()) if (!this.ended.has(executionOf(task.descriptor))) yield { labels: labelsOf(task.descriptor), counters: task.counters };
  }

  /**
   * A per-task metric, its series rebuilt at each scrape (so expired tasks vanish) for
   * the tasks that have a value for it: a counter adds up the attempts under the same
   * labels, a gauge keeps the value set last (tasks()).
   */
  private taskMetric(type: 'counter' | 'gauge', name: string, help: string, value: (counters: TaskCounters) => number | undefined): void {
    const values = (): Iterable<[Record<TaskLabels, string>, number]> => valuesOf(this.tasks(), value);
    const config = { name, help, labelNames: TASK_LABELS, registers: [this.registry] };
    if (type === 'counter') {
      new Counter<TaskLabels>({ ...config, collect() { this.reset(); for (const [labels, v] of values()) this.inc(labels, v); } });
    } else {
      new Gauge<TaskLabels>({ ...config, collect() { this.reset(); for (const [labels, v] of values()) this.set(labels, v); } });
    }
  }

  /** Buffers in use over the most the pools may take, of the partitions' pools (output) and the gates' (input); 0 without pools. */
  poolUsage(): { output: number; input: number } {
    let used = 0;
    let max = 0;
    for (const id of this.env.partitions.ids()) {
      const pool = this.env.partitions.get(id)?.pool;
      if (pool === undefined || pool.isDestroyed) continue;
      used += pool.buffersInUse;
      max += pool.max;
    }
    let inUsed = 0;
    let inMax = 0;
    for (const task of this.live()) {
      for (const input of task.bufferStats().inputs) {
        inUsed += input.poolUsed;
        inMax += input.poolMax;
      }
    }
    return { output: max === 0 ? 0 : used / max, input: inMax === 0 ? 0 : inUsed / inMax };
  }

  private networkMetrics(): void {
    const env = this.env;
    const usage = (): { output: number; input: number } => this.poolUsage();
    const registers = [this.registry];
    const counters = networkCounters;
    new Gauge<'state'>({
      name: 'spillway_network_buffers',
      help: 'Network buffers of the TaskManager by state (their sum is the total)',
      labelNames: ['state'],
      registers,
      collect() {
        this.set({ state: 'used' }, env.buffers.segmentsInUse);
        this.set({ state: 'available' }, env.buffers.totalSegments - env.buffers.segmentsInUse);
      },
    });
    new Gauge({
      name: 'spillway_network_buffer_size_bytes',
      help: 'Size of one network buffer',
      registers,
      collect() {
        this.set(env.buffers.segmentSize);
      },
    });
    new Gauge<'side'>({
      name: 'spillway_network_pool_usage_ratio',
      help: 'Buffers in use over the most the pools may take: output pools of partitions, input pools of gates (Flink outPoolUsage, inPoolUsage)',
      labelNames: ['side'],
      registers,
      collect() {
        const { output, input } = usage();
        this.set({ side: 'output' }, output);
        this.set({ side: 'input' }, input);
      },
    });
    for (const [direction, help, remote] of [
      ['sent', 'Bytes sent to consumers: over data connections (remote), or handed over in the process (local)', () => counters.sentBytes],
      ['received', 'Bytes received from producers: over data connections (remote), or handed over in the process (local)', () => counters.receivedBytes],
    ] as const) {
      new Counter<'locality'>({
        name: `spillway_network_${direction}_bytes_total`,
        help,
        labelNames: ['locality'],
        registers,
        collect() {
          this.reset();
          this.inc({ locality: 'remote' }, remote());
          this.inc({ locality: 'local' }, counters.localBytes);
        },
      });
    }
    this.total('spillway_network_credit_wait_seconds_total', 'Time buffers ready to send waited for their receiver to grant credit', () => counters.creditWaitMs / 1000);
    this.total('spillway_spilled_bytes_total', 'Bytes written to spill files by blocking partitions', () => counters.spilledBytes);
    this.total('spillway_spill_files_total', 'Spill files created', () => counters.spillFiles);
    new Gauge<'direction'>({
      name: 'spillway_network_connections',
      help: 'Open data connections: served to other TaskManagers (in), or opened to them (out)',
      labelNames: ['direction'],
      registers,
      collect() {
        this.set({ direction: 'in' }, env.serverConnections);
        this.set({ direction: 'out' }, env.connections.connectionCount);
      },
    });
  }

  private total(name: string, help: string, value: () => number): void {
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(value());
      },
    });
  }
}

function executionOf(descriptor: TaskDeploymentDescriptor): string {
  return executionId(descriptor.taskId, descriptor.attempt);
}

function labelsOf(descriptor: TaskDeploymentDescriptor): Record<TaskLabels, string> {
  return { job: descriptor.jobId, stage: descriptor.stage, subtask: String(descriptor.subtask) };
}

/** Each task's labels and its value of a metric, where it has one. */
function* valuesOf(tasks: Iterable<TaskSeries>, value: (counters: TaskCounters) => number | undefined): Iterable<[Record<TaskLabels, string>, number]> {
  for (const task of tasks) {
    const v = value(task.counters);
    if (v !== undefined) yield [task.labels, v];
  }
}

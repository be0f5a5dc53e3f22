/**
 * `npm run bench -- --only stages [--quick] [--blocking]`: where a shuffled record's CPU
 * goes, stage by stage of its trip, on `synthetic` pipelined (blocking with --blocking;
 * 10 M records of 100 B over 1 M keys; quick: 2 M) on 2 TaskManagers of 1 slot at
 * parallelism 2, after two warm jobs. Needs
 * Linux `perf`. While the measured job runs, `perf record -g` samples every thread of
 * every cluster process (cpu-clock, 999 Hz); each sample goes to the stage of the first
 * frame from the leaf up that a rule of STAGES knows (so a memcpy or a V8 builtin counts
 * for the engine function that called it), and a stage's ns/record is its share of the
 * samples times the CPU of every cluster process over the job (/proc) per record. The
 * CPU of each kind of thread, from /proc/PID/task/TID/stat, and the tasks' busy,
 * backpressured and idle time are printed beside it. docs/perf-where-the-time-goes.md
 * says how to read it.
 *
 * The processes run with V8's --perf-basic-prof, which writes /tmp/perf-PID.map: JIT code
 * of every isolate (each task thread has its own) by address. Addresses are reused as
 * isolates come and go and code is collected, so a sample's JS address is looked up here,
 * the latest entry that covers it winning (perf itself would take an older one).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runSynthetic, withCluster, type BenchCluster, type Exchange, type JobStatus } from '../cluster.js';
import { CPU_PARALLELISM } from '../cpu.js';
import type { BenchSection } from './Section.js';

/** Task threads of each TaskManager: one slot, so one task of each of synthetic's two stages. */
const TASKS_PER_TASKMANAGER = 2;
/** Samples a second of each thread on a CPU: enough for a few thousand samples a job, too few to slow it. */
const FREQUENCY = 999;

/**
 * A stage and what its frames look like. Frames are `JS:*name file:///...js:line:col` for
 * JIT code (`*` optimized, `^` baseline, `~` interpreted), C++ and kernel symbols as they
 * are. A TurboFan-inlined function has no frame of its own: the selector and the batch
 * push are inlined into RecordWriter.emit, the count into the chain's push.
 */
const STAGES: { stage: string; frames: RegExp }[] = [
  { stage: 'generate (the generator and the source loop)', frames: /[*^~]generate file:.*\/(Synthetic|JobBuilder)\.js|\/(GenerateSource|Task)\.js:/ },
  { stage: 'select channel, batch (RecordWriter.emit, the selector inlined)', frames: /\/network\/writer\// },
  // A blocking exchange's partition files: before the partition rule of the hand-over, which would take their frames too.
  {
    stage: 'spill write and read back (partition files, checksums, kernel)',
    frames: /\/(PartitionFile|SpillableSubpartition|BlockingStorage)\.js|crc32|ext4_|vfs_write|vfs_read|do_iter_readv_writev|__x64_sys_pwritev|__x64_sys_pread|uv__fs_|filemap_/,
  },
  { stage: 'serialize (msgpackr pack, into the shared buffer)', frames: /msgpackr\/pack\.js|\/RecordSerializer\.js/ },
  {
    stage: 'hand over between task and network threads (rings, wake-ups, partitions, pools)',
    frames: /\/network\/(thread|partition)\/|\/(TaskHost|BufferPool|NetworkBufferPool)\.js|futex|Atomics/,
  },
  {
    stage: 'send (subpartition readers, frames, socket writes, kernel)',
    frames: /\/(ServerConnection|SubpartitionReader|FrameEncoder|DataServer)\.js|writevGeneric|Socket\._write|clearBuffer|writeOrBuffer|uv__write|uv_try_write|tcp_sendmsg|sock_write_iter|do_writev|__x64_sys_writev/,
  },
  {
    stage: 'receive (frames, credit, socket reads, kernel)',
    frames: /\/(FrameDecoder|PeerConnection|RemoteInputChannel|PartitionReceiver|ConnectionManager)\.js|onStreamRead|uv__read|tcp_recvmsg|sock_read_iter|__x64_sys_read\b/,
  },
  { stage: 'hand to the operator (StreamInput, input gates)', frames: /\/StreamInput\.js|\/network\/consumer\// },
  { stage: 'deserialize (copy out, msgpackr unpack)', frames: /msgpackr\/unpack\.js|\/RecordDeserializer\.js/ },
  { stage: 'operator (the count per key, the chain)', frames: /\/Synthetic\.js|\/runtime\// },
  // The job's functions are new closures each job, so each job's task threads optimize them again.
  { stage: 'JIT compilation (mostly TurboFan on V8 platform threads)', frames: /v8::internal::compiler::|v8::internal::maglev::|OptimizingCompileDispatcher|Compiler::Compile|BaselineBatchCompiler/ },
  { stage: 'garbage collection', frames: /Heap::|Scavenger|MarkCompact|ConcurrentMarking|Sweeper|MinorMC|MemoryAllocator/ },
  // Only the poll itself: libuv's loop is under every frame of a thread.
  { stage: 'event loop polling (epoll)', frames: /do_epoll_wait|epoll_pwait/ },
];
const UNKNOWN_SHOWN = 15;
/** A stage's commonest frames shown: those its rule knew, each sample's nearest the leaf. */
const FRAMES_SHOWN = 6;
const JOB_MANAGER = 'JobManager (every thread)';
const OTHER = 'other (control plane, reports, scheduling, Node)';

export interface StageRow {
  stage: string;
  samples: number;
  share: number;
  nsPerRecord: number;
  /** The frames its rule knew in the most samples. */
  frames: { frame: string; samples: number }[];
}

interface ThreadCpu {
  kind: string;
  cpuSeconds: number;
  nsPerRecord: number;
}

export interface StageFigures {
  exchange: Exchange;
  records: number;
  seconds: number;
  cpuSeconds: number;
  nsPerRecord: number;
  samples: number;
  stages: StageRow[];
  threads: ThreadCpu[];
  /** The commonest leaf frames of the samples no rule knew, for rules still to write. */
  unknown: { frame: string; samples: number }[];
  /** Summed over each stage's tasks, ms. */
  tasks: { stage: string; busyMs: number; backPressuredMs: number; idleMs: number }[];
}

export const STAGES_SECTION: BenchSection = {
  name: 'stages',
  about: "where a synthetic record's CPU goes, stage by stage, with perf (Linux perf needed)",
  async run(quick) {
    const records = quick ? 2_000_000 : 10_000_000;
    const exchange: Exchange = process.argv.includes('--blocking') ? 'blocking' : 'pipelined';
    if (spawnSync('perf', ['--version']).status !== 0) throw new Error('stages: needs Linux perf (apt-get install linux-perf)');
    const figures = await withPerfMaps(() => withCluster({ slots: 1 }, (cluster) => measureStages(cluster, records, exchange)));
    printStages(figures);
    return figures;
  },
};

/**
 * Starts what `start` starts with V8's perf maps on (NODE_OPTIONS is read by the cluster's
 * processes only). V8 then also writes an isolate-*.log per isolate into the working
 * directory, so the cluster runs in a temporary one, removed after.
 */
async function withPerfMaps<T>(start: () => Promise<T>): Promise<T> {
  const before = process.env.NODE_OPTIONS;
  const cwd = process.cwd();
  const logs = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-stages-logs-'));
  process.env.NODE_OPTIONS = `${before ?? ''} --perf-basic-prof`.trim();
  process.chdir(logs);
  try {
    return await start();
  } finally {
    process.chdir(cwd);
    fs.rmSync(logs, { recursive: true, force: true });
    if (before === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = before;
  }
}

async function measureStages(cluster: BenchCluster, records: number, exchange: Exchange): Promise<StageFigures> {
  for (let i = 0; i < 2; i++) await runSynthetic(cluster, records, exchange, { parallelism: CPU_PARALLELISM });
  const pids = cluster.pids();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-stages-'));
  try {
    const data = path.join(work, 'perf.data');
    const perf = spawn('perf', ['record', '-q', '-F', String(FREQUENCY), '-g', '-e', 'cpu-clock', '-o', data, '-p', pids.join(',')], { stdio: 'inherit' });
    const exited = new Promise((resolve) => perf.once('exit', resolve));
    // perf attaches to every thread before it samples: give it that time.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const threadsBefore = threadTimes(pids);
    const cpu = cluster.cpuSeconds();
    const { run, status } = await runSynthetic(cluster, records, exchange, { parallelism: CPU_PARALLELISM });
    const cpuSeconds = cluster.cpuSeconds() - cpu;
    const threads = threadCpu(pids, threadsBefore, threadTimes(pids), records);
    perf.kill('SIGINT');
    await exited;
    const nsPerRecord = (cpuSeconds * 1e9) / records;
    return { exchange, records, seconds: run.seconds, cpuSeconds, nsPerRecord, ...attribute(data, pids, nsPerRecord), threads, tasks: taskTimes(status) };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
    // A few MB each, and of no use once the samples are attributed.
    for (const pid of pids) fs.rmSync(`/tmp/perf-${pid}.map`, { force: true });
  }
}

/** Each sample's stage, counted; shares of all samples, ns/record of `nsPerRecord`. */
function attribute(data: string, pids: number[], nsPerRecord: number): Pick<StageFigures, 'stages' | 'samples' | 'unknown'> {
  const script = spawnSync('perf', ['script', '-i', data, '-F', 'pid,tid,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (script.status !== 0) throw new Error(`perf script: ${script.stderr}`);
  const maps = new Map(pids.map((pid) => [pid, new PerfMap(`/tmp/perf-${pid}.map`)]));
  const counts = new Map<string, number>();
  const matched = new Map<string, Map<string, number>>();
  const unknown = new Map<string, number>();
  let samples = 0;
  for (const block of script.stdout.split('\n\n')) {
    const lines = block.split('\n').filter((line) => line.trim() !== '');
    if (lines.length === 0) continue;
    const [pid] = lines[0].trim().split(/[\s/]+/).map(Number);
    const frames = lines.slice(1).map((line) => frameName(line, maps.get(pid)));
    const { stage, frame } = pid === pids[0] ? { stage: JOB_MANAGER, frame: frames[0] } : stageOf(frames);
    counts.set(stage, (counts.get(stage) ?? 0) + 1);
    const byFrame = matched.get(stage) ?? new Map<string, number>();
    matched.set(stage, byFrame.set(frame, (byFrame.get(frame) ?? 0) + 1));
    if (stage === OTHER) unknown.set(frames[0], (unknown.get(frames[0]) ?? 0) + 1);
    samples++;
  }
  const order = [...STAGES.map((s) => s.stage), JOB_MANAGER, OTHER];
  const stages = order.map((stage) => {
    const n = counts.get(stage) ?? 0;
    return { stage, samples: n, share: n / samples, nsPerRecord: (n / samples) * nsPerRecord, frames: commonest(matched.get(stage), FRAMES_SHOWN) };
  });
  return { stages, samples, unknown: commonest(unknown, UNKNOWN_SHOWN) };
}

function commonest(counts: Map<string, number> | undefined, n: number): { frame: string; samples: number }[] {
  return [...(counts ?? [])]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([frame, samples]) => ({ frame, samples }));
}

/** The stage of the first frame from the leaf up that a rule knows (the first such rule, for a frame several know), and that frame. */
function stageOf(frames: string[]): { stage: string; frame: string } {
  for (const frame of frames) {
    const rule = STAGES.find((s) => s.frames.test(frame));
    if (rule) return { stage: rule.stage, frame };
  }
  return { stage: OTHER, frame: frames[0] };
}

/** `ADDRESS SYMBOL (DSO)` of perf script; JIT addresses looked up in the process's map. */
function frameName(line: string, map: PerfMap | undefined): string {
  const match = /^\s*([0-9a-f]+) (.*) \((.*)\)$/.exec(line);
  if (!match) return line.trim();
  const [, address, symbol, dso] = match;
  return dso.startsWith('/tmp/perf-') && map ? (map.lookup(parseInt(address, 16)) ?? symbol) : symbol;
}

/** A V8 perf map, `START SIZE NAME` a line in hex, looked up with the latest covering entry winning. */
class PerfMap {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly names: string[] = [];
  private readonly cache = new Map<number, string | undefined>();

  constructor(file: string) {
    if (!fs.existsSync(file)) return;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
      if (!match) continue;
      const start = parseInt(match[1], 16);
      this.starts.push(start);
      this.ends.push(start + parseInt(match[2], 16));
      this.names.push(match[3]);
    }
  }

  lookup(address: number): string | undefined {
    if (this.cache.has(address)) return this.cache.get(address);
    let name: string | undefined;
    for (let i = this.starts.length - 1; i >= 0; i--) {
      if (this.starts[i] <= address && address < this.ends[i]) {
        name = this.names[i];
        break;
      }
    }
    this.cache.set(address, name);
    return name;
  }
}

/** utime + stime ticks of every thread of each process, by "pid/tid". */
function threadTimes(pids: number[]): Map<string, number> {
  const times = new Map<string, number>();
  for (const pid of pids) {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        times.set(`${pid}/${tid}`, Number(fields[11]) + Number(fields[12]));
      } catch {
        // The thread ended meanwhile; its time stays in the process's.
      }
    }
  }
  return times;
}

/**
 * CPU over the job by kind of thread: the JobManager, each TaskManager's main thread (the
 * network thread), and the TaskManagers' other threads, the busiest two of each being
 * its task threads (the generating and the counting task) and the rest V8's platform
 * threads (GC), libuv's and the heartbeat thread.
 */
function threadCpu(pids: number[], before: Map<string, number>, after: Map<string, number>, records: number): ThreadCpu[] {
  const sums = new Map<string, number>();
  const add = (kind: string, ticks: number): void => void sums.set(kind, (sums.get(kind) ?? 0) + ticks / 100);
  for (const pid of pids) {
    const others: number[] = [];
    for (const [key, ticks] of after) {
      const [p, tid] = key.split('/').map(Number);
      if (p !== pid) continue;
      const used = ticks - (before.get(key) ?? 0);
      if (pid === pids[0]) add('JobManager, every thread', used);
      else if (tid === pid) add('TaskManager main threads (network)', used);
      else others.push(used);
    }
    others.sort((a, b) => b - a);
    others.forEach((used, i) => add(i < TASKS_PER_TASKMANAGER ? 'task threads (generate and count)' : 'other threads (V8 platform / GC, libuv, heartbeat)', used));
  }
  return [...sums].map(([kind, cpuSeconds]) => ({ kind, cpuSeconds, nsPerRecord: (cpuSeconds * 1e9) / records }));
}

function taskTimes(status: JobStatus): StageFigures['tasks'] {
  const stages = new Map<string, { stage: string; busyMs: number; backPressuredMs: number; idleMs: number }>();
  for (const task of status.tasks) {
    const entry = stages.get(task.stage) ?? { stage: task.stage, busyMs: 0, backPressuredMs: 0, idleMs: 0 };
    entry.busyMs += task.counters.busyMs ?? 0;
    entry.backPressuredMs += task.counters.backPressuredMs ?? 0;
    entry.idleMs += task.counters.idleMs ?? 0;
    stages.set(task.stage, entry);
  }
  return [...stages.values()];
}

function printStages(f: StageFigures): void {
  const pct = (share: number): string => `${(share * 100).toFixed(1)}%`;
  console.log(`\nsynthetic ${f.exchange}, ${f.records.toLocaleString('en-US')} records, 2 TaskManagers x 1 slot, parallelism ${CPU_PARALLELISM}: ${f.seconds.toFixed(2)} s, ${f.cpuSeconds.toFixed(2)} CPU s of every cluster process, ${f.nsPerRecord.toFixed(0)} ns a record; ${f.samples} perf samples\n`);
  console.log('| stage | ns/record | share |\n| --- | ---: | ---: |');
  for (const s of f.stages) console.log(`| ${s.stage} | ${s.nsPerRecord.toFixed(0)} | ${pct(s.share)} |`);
  const list = (frames: { frame: string; samples: number }[]): string => frames.map((u) => `${u.frame.replace(/ file:\/\/\S*\//, ' ')} (${u.samples})`).join('; ');
  console.log('\nthe frames each stage was known by, commonest first:');
  for (const s of f.stages) if (s.frames.length > 0 && s.stage !== OTHER) console.log(`- ${s.stage}: ${list(s.frames)}`);
  console.log(`\nthe commonest leaf frames of "${OTHER}": ${list(f.unknown)}`);
  console.log('\n| threads (/proc) | CPU s | ns/record |\n| --- | ---: | ---: |');
  for (const t of f.threads) console.log(`| ${t.kind} | ${t.cpuSeconds.toFixed(2)} | ${t.nsPerRecord.toFixed(0)} |`);
  console.log('\n| tasks | busy ms | backpressured ms | idle ms |\n| --- | ---: | ---: | ---: |');
  for (const t of f.tasks) console.log(`| ${t.stage} | ${t.busyMs.toFixed(0)} | ${t.backPressuredMs.toFixed(0)} | ${t.idleMs.toFixed(0)} |`);
}

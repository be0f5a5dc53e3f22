/**
 * `node dist/bench/history.js [JOBS]`: a JobManager with a 256 MiB heap and 2
 * TaskManagers (2 slots each) run JOBS (default 300) small jobs in a row, a mix of
 * word count (collected and to files, pipelined and blocking), synthetic, join and
 * sort, each checked. Every 50 jobs it prints the JobManager's RSS and heap (after a
 * forced GC) and every process's descriptors and threads. It fails (exit 1) unless the
 * JobManager is alive at the end and its RSS after the last job is within 100 MiB of
 * its RSS after the 50th.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalCluster } from '../src/cli/LocalCluster.js';
import { processStats } from '../src/cli/ProcessStats.js';
import { writeCorpus } from '../src/job/Corpus.js';
import { callJson } from '../src/rpc/HttpClient.js';
import { JobState } from '../src/lifecycle/JobState.js';

const JOBS = Number(process.argv[2] ?? 300);
const MIB = 1 << 20;
const RSS_SLACK = 100 * MIB;

interface Status {
  state: string;
  error?: string;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-history-'));
const corpus = path.join(work, 'corpus');
writeCorpus(corpus, 4, 512 << 10, 11);
const cluster = new LocalCluster({
  taskManagers: 2,
  slots: 2,
  memory: '64mb',
  stdio: process.env.BENCH_VERBOSE ? 'inherit' : 'ignore',
  jobManagerNodeArgs: ['--max-old-space-size=256', '--expose-gc'],
});

/** The i-th job of the mix. */
function mix(i: number): Record<string, unknown> {
  const exchange = i % 2 === 0 ? 'pipelined' : 'blocking';
  switch (i % 6) {
    case 0:
    case 1:
      return { job: 'wordcount', params: { input: corpus }, exchange };
    case 2:
      return { job: 'wordcount', params: { input: corpus, output: path.join(work, 'out', String(i % 12)) }, exchange };
    case 3:
      return { job: 'synthetic', params: { records: 200_000, keys: 10_000 }, exchange };
    case 4:
      return { job: 'join', params: { customers: 5000, orders: 50_000 }, exchange };
    default:
      return { job: 'sort', params: { records: 50_000, seed: i }, exchange };
  }
}

async function runJob(url: string, body: Record<string, unknown>): Promise<string> {
  const { id } = await callJson<{ id: string }>('POST', `${url}/jobs`, { parallelism: 4, ...body });
  for (;;) {
    await new Promise((r) => setTimeout(r, 20));
    const status = await callJson<Status>('GET', `${url}/jobs/${id}`);
    if (status.state === JobState.FINISHED) return id;
    if (['FAILED', 'CANCELED'].includes(status.state)) throw new Error(`job ${id} (${JSON.stringify(body)}) ${status.state}: ${status.error}`);
  }
}

async function report(url: string, jobs: number): Promise<number> {
  const { heapUsed } = await callJson<{ heapUsed: number }>('POST', `${url}/internal/debug/gc`, {});
  const [jm, ...tms] = cluster.processes.map((child) => processStats(child.pid!));
  const tmText = tms.map((s, i) => `tm${i + 1} ${s.fds} fds ${s.threads} threads ${(s.rss / MIB).toFixed(0)} MiB`).join(', ');
  console.log(
    `after ${String(jobs).padStart(4)} jobs: jobmanager RSS ${(jm.rss / MIB).toFixed(1)} MiB, heap ${(heapUsed / MIB).toFixed(1)} MiB, ` +
      `${jm.fds} fds, ${jm.threads} threads; ${tmText}`,
  );
  return jm.rss;
}

try {
  const url = await cluster.start();
  let rssAt50 = 0;
  let rssAtEnd = 0;
  for (let i = 1; i <= JOBS; i++) {
    const id = await runJob(url, mix(i - 1));
    if (!mix(i - 1).params || !(mix(i - 1).params as { output?: string }).output) await callJson('GET', `${url}/jobs/${id}/result`);
    if (i % 50 === 0 || i === JOBS) {
      const rss = await report(url, i);
      if (i === 50) rssAt50 = rss;
      rssAtEnd = rss;
    }
  }
  const alive = cluster.jobManager.exitCode === null && cluster.jobManager.signalCode === null;
  const grown = rssAtEnd - rssAt50;
  console.log(`jobmanager ${alive ? 'alive' : 'DEAD'}; RSS after job ${JOBS} is ${(grown / MIB).toFixed(1)} MiB above RSS after job 50 (at most 100 MiB)`);
  if (!alive || grown > RSS_SLACK) process.exitCode = 1;
} finally {
  await cluster.stop();
  fs.rmSync(work, { recursive: true, force: true });
}

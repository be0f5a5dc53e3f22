import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus } from '../job/Corpus.js';
import type { JobDetails } from '../jobmanager/jobs/JobViews.js';
import { RestClient } from '../rest/RestClient.js';
import { isErrorCode, SpillwayError } from '../errors/Errors.js';
import { JobState } from '../lifecycle/JobState.js';
import { DEFAULT_SLOTS } from '../taskmanager/TaskManagerOptions.js';
import { printFailure } from './Failure.js';
import { LocalCluster } from './LocalCluster.js';
import { DEFAULT_TASKMANAGERS } from './LocalClusterOptions.js';

/**
 * `npm start`: an embedded local cluster (a JobManager and 2 TaskManagers, real TCP
 * between them) runs word count over a generated 20 MB corpus, prints the top words
 * and the throughput, and stops every process it started.
 */
async function runDemo(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-demo-'));
  const corpus = path.join(work, 'corpus');
  const output = path.join(work, 'output');
  // The demo shows its result; the cluster's own log says only what went wrong.
  const cluster = new LocalCluster({ taskManagers: DEFAULT_TASKMANAGERS, slots: DEFAULT_SLOTS, stdio: 'inherit', extraArgs: ['--log-level', 'warn'] });
  try {
    writeCorpus(corpus, 4, 5 << 20, 1);
    const url = await cluster.start();
    console.log(`local cluster up: jobmanager ${url}, ${DEFAULT_TASKMANAGERS} taskmanagers with ${DEFAULT_SLOTS} slots each`);
    const jm = new RestClient(url);
    const id = await jm.submit({ job: 'wordcount', params: { input: corpus, output }, parallelism: DEFAULT_TASKMANAGERS * DEFAULT_SLOTS });
    let status: JobDetails;
    do {
      await new Promise((r) => setTimeout(r, 100));
      status = await jm.job(id);
    } while (!JobState.isTerminal(status.state));
    if (status.state !== JobState.FINISHED) throw new SpillwayError(isErrorCode(status.errorCode) ? status.errorCode : 'SPW_ERR_TASK_FAILED', `word count ${status.state}: ${status.error}`);
    printTopWords(output, status);
  } finally {
    await cluster.stop();
  }
}

function printTopWords(output: string, status: JobDetails): void {
  const counts: [string, number][] = [];
  for (const part of fs.readdirSync(output).sort()) {
    for (const line of fs.readFileSync(path.join(output, part), 'utf8').split('\n')) {
      const tab = line.indexOf('\t');
      if (tab > 0) counts.push([line.slice(0, tab), Number(line.slice(tab + 1))]);
    }
  }
  counts.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const words = counts.reduce((sum, [, n]) => sum + n, 0);
  const seconds = status.durationMs / 1000;
  console.log('\ntop 10 words:');
  for (const [word, n] of counts.slice(0, 10)) console.log(`  ${word.padEnd(16)} ${n}`);
  console.log(`\n${words} words, ${counts.length} distinct, in ${seconds.toFixed(2)} s (${Math.round(words / seconds)} words/s)`);
  const shuffled = (status.counters.bytesIn / 1e6).toFixed(1);
  // Combined map-side: a tokenize task ships each distinct word once, with its count, in packed groups.
  console.log(`${shuffled} MB shuffled, in ${status.counters.recordsIn} groups of packed counts: each word once per tokenize task, not once per occurrence`);
  console.log(`output: ${output}/part-*`);
}

runDemo().then(
  () => process.exit(0),
  (error: unknown) => {
    printFailure(error);
    process.exit(1);
  },
);

/**
 * Recovery time: blocking word count with one TaskManager SIGKILLed halfway, against
 * the same job undisturbed, in turns on one cluster of 3 TaskManagers x 2 slots
 * (parallelism 4 leaves 2 slots free for the restarted tasks). The killed one is the
 * TaskManager of subtask 3; it is replaced between runs. Both runs are checked exact.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus, zipfCorpusText } from '../src/job/Corpus.js';
import { plainWordCount } from './baselines.js';
import { runWordCount, withCluster, type JobStatus, type WordCountRun } from './cluster.js';
import { alternateRuns, type Measured } from './measure.js';

const TASK_MANAGERS = 3;
/** Runs that may end before the kill lands, in a row, before the figure is given up. */
const KILL_TRIES = 3;
const PARALLELISM = 4;
/**
 * The job's restart delay: the JobManager's default (1 s, as Flink's fixed-delay) is a
 * policy that waits, not recovery work, and alone it would be most of what is measured.
 */
export const RECOVERY_RESTART = { strategy: 'fixed-delay', attempts: 3, delayMs: 100 };

export interface RecoveryRun extends WordCountRun {
  /** The TaskManager killed, and how long after the submission. */
  killed?: string;
  killedAfterSeconds?: number;
}

export interface RecoveryFigures {
  undisturbed: Measured<RecoveryRun>;
  killed: Measured<RecoveryRun>;
}

/** Measures both runs `repeats` times each over a Zipf corpus of `bytes` it writes and removes. */
export async function measureRecovery(bytes: number, repeats: number): Promise<RecoveryFigures> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-recovery-'));
  try {
    const files = writeCorpus(work, 4, Math.ceil(bytes / 4), 3, zipfCorpusText);
    const reference = plainWordCount(files);
    return await withCluster({ taskManagers: TASK_MANAGERS, slots: 2 }, async (cluster) => {
      const run = (onPoll?: (status: JobStatus) => void): Promise<WordCountRun> =>
        runWordCount(cluster, work, reference.bytes, reference.counts, PARALLELISM, { exchange: 'blocking', onPoll, restart: RECOVERY_RESTART });
      // A small first job warms the TaskManagers (module loading, JIT); then the fastest
      // undisturbed run so far (they come first) tells when halfway is: a slow one would
      // put the kill after the end of the next run.
      await runWordCount(cluster, files[0], 0, plainWordCount([files[0]]).counts, PARALLELISM, { exchange: 'blocking' });
      let halfway = Number.POSITIVE_INFINITY;
      const undisturbedRun = async (): Promise<WordCountRun> => {
        const result = await run();
        halfway = Math.min(halfway, (result.seconds * 1000) / 2);
        return result;
      };
      const killedRun = async (): Promise<RecoveryRun> => {
        const submitted = Date.now();
        let kill: Promise<void> | null = null;
        let victim: string | undefined;
        const result = await run((status) => {
          if (kill !== null || Date.now() - submitted < halfway) return;
          victim = status.tasks.find((t) => t.subtask === PARALLELISM - 1)?.taskManager;
          if (victim) kill = cluster.killTaskManager(victim);
        });
        await kill;
        if (victim === undefined) return result;
        await cluster.restoreTaskManagers(TASK_MANAGERS);
        return { ...result, killed: victim, killedAfterSeconds: halfway / 1000 };
      };
      const [undisturbed, killed] = await alternateRuns(
        repeats,
        { measure: undisturbedRun, key: (r) => r.seconds },
        {
          // A run that ended before a poll saw it halfway measured no recovery: it is run again.
          measure: async () => {
            for (let tries = 1; ; tries++) {
              const result = await killedRun();
              if (result.killed !== undefined) return result;
              if (tries === KILL_TRIES) throw new Error(`the job ended before halfway (${halfway.toFixed(0)} ms) ${KILL_TRIES} times: nothing was killed`);
            }
          },
          key: (r) => r.seconds,
        },
      );
      return { undisturbed, killed };
    });
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

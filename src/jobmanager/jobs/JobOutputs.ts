import { JobState } from '../../lifecycle/JobState.js';
import { sinkSpec } from '../../connectors/Sinks.js';
import type { ExecutionGraph } from '../scheduler/ExecutionGraph.js';
import type { Job } from './Job.js';
import type { JobHistory } from '../store/JobHistory.js';

/** Where the store keeps what checkpoints committed of a collect sink: past every task's own index, by stage and the subtask that prepared it. */
const COMMITTED_BASE = 1_000_000;
const MAX_SUBTASKS = 1024;

function committedIndex(stage: number, origin: number): number {
  return COMMITTED_BASE + stage * MAX_SUBTASKS + origin;
}

/** Told of a part of a job's collected records once it is stored: by job id, task index and part, packed. */
export type ResultsListener = (jobId: string, index: number, part: number, packed: Buffer) => void;

/**
 * What a job leaves: the records its collect sinks send (kept in the store by the
 * history) and the folders its text sinks write (committed whole when it finishes,
 * removed when it does not).
 */
export class JobOutputs {
  private readonly listeners = new Set<ResultsListener>();

  constructor(private readonly history: JobHistory) {}

  /**
   * Stores a task's collected records (msgpack, as its TaskManager packed them), keyed
   * by the task's index in stage and subtask order, so a sorted (range-partitioned)
   * result reads back sorted; a later attempt's replace an earlier one's. Resolves
   * once stored: the task reports FINISHED after.
   */
  async addResults(job: Job, taskId: string, attempt: number, packed: Buffer, part = 0, origin?: number): Promise<void> {
    if (!job.graph || JobState.isTerminal(job.state) || job.graph.vertices.get(taskId)?.attempt !== attempt) return;
    const vertex = job.graph.vertices.get(taskId)!;
    // What a checkpoint committed is kept by the subtask that prepared it and the checkpoint: a retried commit replaces itself.
    const index = origin === undefined ? [...job.graph.vertices.keys()].indexOf(taskId) : committedIndex(job.graph.stages.findIndex((s) => s.name === vertex.stage), origin);
    if (index < 0) return;
    // A restarted attempt of an unbounded job's sink sends its parts from 0 again: what the earlier one sent goes.
    if (part === 0 && origin === undefined) await this.history.dropTaskResults(job.seq, index);
    await this.history.saveResults(job.seq, index, packed, part);
    job.resultBytes.set(index, (part === 0 ? 0 : (job.resultBytes.get(index) ?? 0)) + packed.length);
    // The job ended while they were written (it failed or was canceled): they are not kept.
    if (JobState.isTerminal(job.state) && job.state !== JobState.FINISHED) await this.history.dropResults(job.seq);
    else for (const listener of this.listeners) listener(job.id, index, part, packed);
  }

  /** Calls `listener` with every part stored from now on; returns how to stop. */
  onResults(listener: ResultsListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Makes each sink's output of its subtasks' last attempts visible (a text sink renames them into place): whole, once. Throws SPW_ERR_COMMIT or SPW_ERR_SINK_IO. */
  commit(job: Job): void {
    const graph = job.graph!;
    for (const stage of graph.stages) {
      if (stage.sink) sinkSpec(stage.sink).commit?.(stage.sink, job.id, graph.verticesOf(stage.name).map((v) => v.attempt));
    }
  }

  /** Removes what every attempt of the job's sinks wrote; only once no attempt writes any more. */
  abort(graph: ExecutionGraph): void {
    for (const stage of graph.stages) if (stage.sink) sinkSpec(stage.sink).abort?.(stage.sink, graph.jobId);
  }
}

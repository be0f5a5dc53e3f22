import { expect, test } from 'vitest';
import { SpillwayError } from '../../src/errors/Errors.js';
import { ExecutionVertex } from '../../src/jobmanager/scheduler/ExecutionVertex.js';
import { moveJob, type Job } from '../../src/jobmanager/jobs/Job.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import { TaskState } from '../../src/lifecycle/TaskState.js';

function codeOfThrown(call: () => void): string | undefined {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(SpillwayError);
    return (error as SpillwayError).code;
  }
  return undefined;
}

test('a task attempt moves along its transitions and refuses an illegal one with SPW_ERR_ILLEGAL_STATE_TRANSITION', () => {
  const vertex = new ExecutionVertex('job-1.map.0', 'map', 0, 1, 'tm-0001');
  vertex.transition(TaskState.DEPLOYING);
  vertex.transition(TaskState.RUNNING);
  vertex.transition(TaskState.FINISHED);
  expect(vertex.isTerminal).toBe(true);
  expect(codeOfThrown(() => vertex.transition(TaskState.RUNNING))).toBe('SPW_ERR_ILLEGAL_STATE_TRANSITION');
  expect(vertex.state).toBe(TaskState.FINISHED);
  expect(codeOfThrown(() => new ExecutionVertex('job-1.map.1', 'map', 1, 2, 'tm-0001').transition(TaskState.RUNNING))).toBe('SPW_ERR_ILLEGAL_STATE_TRANSITION');
});

test('a restart gives the subtask its next attempt in CREATED, with the last attempt error and times gone', () => {
  const vertex = new ExecutionVertex('job-1.map.0', 'map', 0, 1, 'tm-0001');
  vertex.transition(TaskState.DEPLOYING);
  vertex.transition(TaskState.FAILED);
  vertex.error = { code: 'SPW_ERR_USER_CODE', message: 'boom' };
  vertex.started = 1;
  vertex.ended = 2;
  vertex.newAttempt();
  expect({ attempt: vertex.attempt, state: vertex.state, error: vertex.error, started: vertex.started, ended: vertex.ended }).toEqual({
    attempt: 1,
    state: TaskState.CREATED,
    error: undefined,
    started: undefined,
    ended: undefined,
  });
  vertex.transition(TaskState.DEPLOYING);
});

test('a job that ended cannot run again: moveJob refuses with SPW_ERR_ILLEGAL_STATE_TRANSITION', () => {
  const job = { id: 'job-0001-x', state: JobState.CREATED } as Job;
  moveJob(job, JobState.RUNNING);
  moveJob(job, JobState.CANCELED);
  expect(codeOfThrown(() => moveJob(job, JobState.RUNNING))).toBe('SPW_ERR_ILLEGAL_STATE_TRANSITION');
  expect(job.state).toBe(JobState.CANCELED);
});

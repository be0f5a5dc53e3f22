import { PassThrough } from 'node:stream';
import { unpack } from 'msgpackr';
import { JobState } from '../../lifecycle/JobState.js';
import type { JobRecord } from '../store/JobStore.js';
import type { JobManagerContext } from './JobManagerContext.js';

/** How often a follower looks whether its job has ended, ms. */
const END_CHECK_MS = 200;

/**
 * GET /jobs/:id/result?follow=true: the job's collected records as newline-delimited
 * JSON, those stored so far and then each part as it is stored, until the job ends or
 * the client goes. Every part is written once: the parts read from the store and those
 * told of meanwhile are told apart by their task index and part number.
 */
export function followResults(job: JobRecord, context: JobManagerContext, onClose: (stop: () => void) => void): PassThrough {
  const out = new PassThrough();
  const written = new Map<number, number>();
  const write = (index: number, part: number, records: readonly unknown[]): void => {
    if (part <= (written.get(index) ?? -1)) return;
    written.set(index, part);
    let text = '';
    for (const record of records) text += `${JSON.stringify(record)}\n`;
    if (text !== '') out.write(text);
  };
  const unsubscribe = context.scheduler().onResults((jobId, index, part, packed) => {
    if (jobId === job.id) write(index, part, unpack(packed) as unknown[]);
  });
  for (const { index, part, records } of context.history().resultParts(job.seq)) write(index, part, records);
  const check = setInterval(() => {
    const now = context.job(job.id);
    if (JobState.isTerminal(now.state)) stop();
  }, END_CHECK_MS);
  const stop = (): void => {
    clearInterval(check);
    unsubscribe();
    out.end();
  };
  if (JobState.isTerminal(job.state)) stop();
  onClose(stop);
  return out;
}

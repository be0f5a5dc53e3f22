import type { ErrorCode } from '../../errors/Errors.js';

/** One failure of a task attempt, as GET /jobs/:id/exceptions lists it. */
export interface JobException {
  time: number;
  task: string;
  attempt: number;
  taskManager: string;
  code: ErrorCode;
  message: string;
}

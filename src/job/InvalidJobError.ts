import { SpillwayError } from '../errors/Errors.js';

/** A job that breaks a rule: the message names the problem; its code is SPW_ERR_INVALID_JOB. */
export class InvalidJobError extends SpillwayError {
  constructor(message: string) {
    super('SPW_ERR_INVALID_JOB', message);
    this.name = 'InvalidJobError';
  }
}

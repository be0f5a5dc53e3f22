import type { Command } from '../Command.js';
import { jobManagerCommand } from './JobManagerCommand.js';
import { localCommand } from './LocalCommand.js';
import { savepointCommand, stopCommand } from './SavepointCommand.js';
import { sqlCommand } from './SqlCommand.js';
import { submitCommand } from './SubmitCommand.js';
import { taskManagerCommand } from './TaskManagerCommand.js';

/** Every command of `spillway`, in the order help lists them; a new command is one file and a line here. */
export const COMMANDS: readonly Command[] = [jobManagerCommand, taskManagerCommand, localCommand, submitCommand, sqlCommand, savepointCommand, stopCommand];

/** Exactly once under TaskManager kills, with aligned checkpoints: the tests are test/helpers/exactlyOnce.ts's. */
import { exactlyOnceTests } from '../helpers/exactlyOnce.js';

exactlyOnceTests('aligned');

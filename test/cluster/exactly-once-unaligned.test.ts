/** Exactly once under TaskManager kills, with unaligned checkpoints: the tests are test/helpers/exactlyOnce.ts's. */
import { exactlyOnceTests } from '../helpers/exactlyOnce.js';

exactlyOnceTests('unaligned');

/** `npm run bench`: the end-to-end benchmarks, printed as a table. */
import { formatTransportReport, transportBenchmark } from './transport.js';

console.log(formatTransportReport(await transportBenchmark()));

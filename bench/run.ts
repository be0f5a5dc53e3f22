/**
 * `npm run bench [-- --quick]`: the micro-benchmarks (full mode only), the transport
 * table (1 and 4 channels beside raw loopback TCP), then the suite: cluster figures
 * with their baselines and targets, the latency sweep and its chart. Everything lands
 * in bench/results/<timestamp>.json.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runSuite } from './suite.js';
import { formatTransportReport, transportBenchmark, DEFAULT_CASES } from './transport.js';

const quick = process.argv.includes('--quick');
if (!quick) {
  const micro = spawnSync(process.execPath, [fileURLToPath(new URL('./micro.js', import.meta.url))], { stdio: 'inherit' });
  if (micro.status !== 0) process.exitCode = 1;
}
const transport = await transportBenchmark(DEFAULT_CASES, quick ? 1 : 3);
console.log(formatTransportReport(transport));
const result = await runSuite({ quick, extra: { transport } });
// Failed targets are findings, not errors; a part that could not run at all is one.
if (result.errors.length > 0) process.exitCode = 1;

/**
 * `npm run bench [-- --quick]`: the micro-benchmarks (full mode only), then the suite:
 * cluster figures with their baselines and targets, the latency sweep and its chart.
 * Everything lands in bench/results/<timestamp>.json. `npm run bench -- --only NAME [--quick]` runs one
 * section of its own instead (bench/sections/Sections.ts lists them).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { machineInfo, timestamp, writeResults } from './results.js';
import { SECTIONS } from './sections/Sections.js';
import { runSuite } from './suite.js';

const quick = process.argv.includes('--quick');
const only = process.argv.indexOf('--only');
if (only >= 0) await runSection(process.argv[only + 1]);
else await runAll();

async function runSection(name: string | undefined): Promise<void> {
  const load = name === undefined ? undefined : SECTIONS[name];
  if (load === undefined) {
    console.error(`bench: --only takes one of ${Object.keys(SECTIONS).join(', ')}`);
    process.exitCode = 2;
    return;
  }
  const section = await load();
  console.error(`bench: ${section.name}: ${section.about}${quick ? ' (quick)' : ''}`);
  const figures = await section.run(quick);
  const file = writeResults(`${timestamp()}.${section.name}`, { section: section.name, quick, machine: machineInfo(), figures });
  console.error(`bench: figures in ${file}`);
}

async function runAll(): Promise<void> {
  if (!quick) {
    const micro = spawnSync(process.execPath, [fileURLToPath(new URL('./micro.js', import.meta.url))], { stdio: 'inherit' });
    if (micro.status !== 0) process.exitCode = 1;
  }
  const result = await runSuite({ quick });
  // Failed targets are findings, not errors; a part that could not run at all is one.
  if (result.errors.length > 0) process.exitCode = 1;
}

// `npm test`'s first part: type-check, lint and build side by side (each is one process on
// one core), printing each one's output whole once it ends; fails if any fails.
/* global console, process */
import { spawn } from 'node:child_process';

const steps = ['typecheck', 'lint', 'build'];
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const results = await Promise.all(
  steps.map(
    (step) =>
      new Promise((resolve) => {
        const child = spawn(npm, ['run', '--silent', step], { stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk) => (output += chunk));
        child.stderr.on('data', (chunk) => (output += chunk));
        child.on('close', (code) => resolve({ step, code, output }));
      }),
  ),
);
for (const { step, code, output } of results) {
  console.log(`${code === 0 ? 'ok' : 'FAILED'}: npm run ${step}`);
  if (output.trim() !== '') console.log(output.trimEnd());
}
process.exitCode = results.every((r) => r.code === 0) ? 0 : 1;

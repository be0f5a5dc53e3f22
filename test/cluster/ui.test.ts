/// <reference lib="dom" />
// Functions given to page.evaluate() run in the page: they see the DOM.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, describe, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { writeCorpus, zipfCorpusText } from '../../src/job/Corpus.js';
import { RestClient } from '../../src/rest/RestClient.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { launchBrowser, SCREENSHOTS } from '../helpers/browser.js';
import { checkpointsOf, completedCheckpoint } from '../helpers/checkpoints.js';
import { submitJob, uploadModule, waitFor } from '../helpers/jobs.js';

// A producer of 4 KiB records and a consumer that spends 2 ms on each: the producer's buffers run out.
const SLOW_CONSUMER = `export default () => ({
  name: 'slow-consumer',
  stages: [
    { name: 'produce', parallelism: 1, source: { kind: 'generate', generate: function* () { for (let i = 0; i < 100000; i++) yield [i, 'x'.repeat(4000)]; } } },
    { name: 'consume', parallelism: 1, inputs: [{ from: 'produce', partitioning: { type: 'rebalance' } }],
      operators: [{ map: (r) => { const end = Date.now() + 2; while (Date.now() < end); return r[0]; } }, { filter: () => false }],
      sink: { kind: 'collect' } },
  ],
});`;

let cluster: LocalCluster;
let url: string;
let work: string;
let corpus: string;
let browser: Browser;
let closeBrowser: () => Promise<void> = async () => {};

const test = clusterTest({ taskManagers: 2, slots: 2, memory: '128mb' });

test.beforeAll(async ({ cluster: started }) => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-ui-'));
  corpus = path.join(work, 'corpus');
  writeCorpus(corpus, 4, 4 << 20, 11, zipfCorpusText);
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  cluster = started;
  url = cluster.url;
  ({ browser, close: closeBrowser } = await launchBrowser());
}, 90_000);

afterAll(async () => {
  await closeBrowser();
  fs.rmSync(work, { recursive: true, force: true });
});

/**
 * A page that records every job state it shows, in order. The cluster wants its secret on
 * every REST call: the page is given it as a user would, once, unless `withToken` is false.
 */
async function openPage(withToken = true): Promise<Page> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  if (withToken) await page.evaluateOnNewDocument((token) => localStorage.setItem('spillway-token', token), cluster.secret.token);
  await page.evaluateOnNewDocument(() => {
    const seen: string[] = [];
    (window as unknown as { statesSeen: string[] }).statesSeen = seen;
    new MutationObserver(() => {
      const state = document.querySelector('[data-state]')?.getAttribute('data-state');
      if (state && seen.at(-1) !== state) seen.push(state);
    }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  });
  return page;
}

describe('the web UI in chromium', () => {
  test('word count submitted from the form goes RUNNING then FINISHED; its page shows both stages and a flowing edge', async () => {
    const page = await openPage();
    await page.goto(`${url}/#/submit`);
    await page.waitForSelector('form.submit option[value="wordcount"]');
    await page.select('select[name="job"]', 'wordcount');
    await page.$eval('textarea[name="params"]', (el, input) => ((el as HTMLTextAreaElement).value = JSON.stringify({ input })), corpus);
    await page.$eval('textarea[name="params"]', (el) => el.dispatchEvent(new Event('input', { bubbles: true })));
    await page.type('input[name="parallelism"]', '4');
    await page.click('form.submit button[type="submit"]');
    await page.waitForFunction(() => location.hash.startsWith('#/jobs/job-'), { timeout: 30_000 });
    const id = (await page.evaluate(() => location.hash)).slice('#/jobs/'.length);
    await page.waitForSelector('[data-state="FINISHED"]', { timeout: 120_000 });
    const states = await page.evaluate(() => (window as unknown as { statesSeen: string[] }).statesSeen);
    expect(states.filter((s) => s !== 'CREATED')).toEqual(['RUNNING', 'FINISHED']);
    expect((await callJson<{ state: string }>('GET', `${url}/jobs/${id}`)).state).toBe('FINISHED');

    await page.goto(`${url}/#/jobs/${id}`);
    await page.waitForSelector('g.stage[data-stage="count"]');
    const stages = await page.$$eval('g.stage', (gs) => gs.map((g) => g.getAttribute('data-stage')));
    expect(stages.sort()).toEqual(['count', 'tokenize']);
    const edge = await page.$eval('g.edge', (g) => ({ name: g.getAttribute('data-edge'), rate: Number(g.getAttribute('data-records-per-second')), label: g.textContent }));
    expect(edge.name).toBe('tokenize->count');
    expect(edge.rate, 'the edge carried records').toBeGreaterThan(0);
    expect(edge.label).toContain('pipelined');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'job-page.png') });
    await page.close();
  }, 180_000);

  test('every page opens at its own address: the jobs newest first, a TaskManager with its charts, the overview', async () => {
    const page = await openPage();
    const { jobs } = await callJson<{ jobs: { id: string; submitted: number }[] }>('GET', `${url}/jobs`);
    expect(jobs.length).toBeGreaterThan(0);
    await page.goto(`${url}/#/jobs`);
    await page.waitForSelector('tr[data-job]');
    const listed = await page.$$eval('tr[data-job]', (rows) => rows.map((row) => row.getAttribute('data-job')));
    expect(listed).toEqual([...jobs].sort((a, b) => b.submitted - a.submitted).map((job) => job.id));
    const { taskmanagers } = await callJson<{ taskmanagers: { id: string }[] }>('GET', `${url}/taskmanagers`);
    await page.goto(`${url}/#/taskmanagers/${taskmanagers[0].id}`);
    await page.waitForFunction(() => document.querySelectorAll('.uplot').length === 3);
    expect(await page.$eval('h1', (h) => h.textContent)).toBe(`TaskManager ${taskmanagers[0].id}`);
    await page.goto(`${url}/#/`);
    await page.waitForFunction(() => document.querySelectorAll('.card').length > 0);
    // The TaskManagers' table comes from a poll of its own: a header row and one row each.
    await page.waitForFunction((rows) => document.querySelectorAll('main table tr').length === rows, {}, taskmanagers.length + 1);
    // Who leads, as GET /overview says: without HA this JobManager, at epoch 0.
    const { leader } = await new RestClient(url).overview();
    expect(await page.$eval('.role', (b) => b.textContent)).toBe('leader');
    expect(await page.$eval('.leader-url', (s) => s.textContent)).toBe(leader?.url);
    await page.close();
  }, 60_000);

  test('behind a REST API that wants a token, the page asks for it once, keeps it and sends it on every call', async () => {
    const secret = cluster.secret.token;
    const page = await openPage(false);
    // The JobManager answers the API 401 without the token; the page's own files need none.
    const refused: string[] = [];
    page.on('response', (response) => response.status() === 401 && refused.push(new URL(response.url()).pathname));
    // The browser's storage outlives a page: what the pages before gave it goes first.
    await page.goto(`${url}/ui/style.css`);
    await page.evaluate(() => localStorage.removeItem('spillway-token'));
    await page.goto(`${url}/#/`);
    await page.waitForSelector('input[name="token"]');
    expect(refused).toContain('/overview');
    expect(refused.filter((p) => p === '/' || p.startsWith('/ui/')), 'the UI itself is served without a token').toEqual([]);
    await page.type('input[name="token"]', secret);
    await Promise.all([page.waitForNavigation(), page.click('form.banner button')]);
    await page.waitForFunction(() => document.querySelectorAll('.card').length > 0);
    expect(await page.$('input[name="token"]'), 'no token asked for again').toBeNull();
    await page.goto(`${url}/#/jobs`);
    await page.waitForSelector('tr[data-job]');
    expect(await page.evaluate(() => localStorage.getItem('spillway-token'))).toBe(secret);
    await page.close();
  }, 60_000);

  test('a slow consumer: the producer stage is shown backpressured, the token given is sent, and the cancel button ends the job', async () => {
    const hash = await uploadModule(url, SLOW_CONSUMER);
    const { id } = await callJson<{ id: string }>('POST', `${url}/jobs`, { module: hash, params: {} });
    const page = await openPage();
    const authorizations = new Set<string>();
    page.on('request', (request) => authorizations.add(request.headers().authorization ?? 'none'));
    await page.goto(`${url}/#/jobs/${id}`);
    await page.waitForSelector('g.stage[data-stage="produce"][data-backpressure="HIGH"]', { timeout: 60_000 });
    const consume = await page.$eval('g.stage[data-stage="consume"]', (g) => g.getAttribute('data-backpressure'));
    expect(consume, 'the slow consumer itself is not backpressured').toBe('OK');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'backpressured.png') });
    // The REST view behind it: the producer HIGH, and the edge's buffers waiting on the consumer's side of the credit loop.
    const job = await callJson<{ tasks: { stage: string; backPressure: string }[]; edges: { buffers: Record<string, number> }[] }>('GET', `${url}/jobs/${id}`);
    expect(job.tasks.find((t) => t.stage === 'produce')?.backPressure).toBe('HIGH');
    const { queued, inFlight, atConsumers, spilled } = job.edges[0].buffers;
    expect(queued + inFlight + atConsumers, 'buffers of the edge are held up').toBeGreaterThan(0);
    expect(spilled, 'a pipelined edge spills nothing').toBe(0);
    await page.click('button.cancel');
    await page.waitForSelector('[data-state="CANCELED"]', { timeout: 60_000 });
    expect((await waitFor(url, id)).state).toBe('CANCELED');
    const apiCalls = [...authorizations].filter((a) => a !== 'none');
    expect(apiCalls, 'REST calls carry the token kept in the page').toEqual([`Bearer ${cluster.secret.token}`]);
    await page.close();
  }, 120_000);

  test("an unbounded job's page shows each stage's watermark as it moves, and marks a stage whose watermark is stuck", async () => {
    const folder = path.join(work, 'watched');
    fs.mkdirSync(folder);
    // Two streams: Nexmark paced (its watermark moves), and a watched folder nobody writes to (its watermark never comes).
    const moving = await callJson<{ id: string }>('POST', `${url}/jobs`, { job: 'nexmark-q5', params: { rate: 2000, sink: 'discard' }, parallelism: 2 });
    const stuckJob = `import { JobBuilder, tumbling } from 'spillway';
const job = new JobBuilder('stuck');
job.readText(${JSON.stringify(folder)}, { monitor: 100 }).assignTimestamps(() => 0).keyBy((l) => l).window(tumbling(1000))
  .aggregate({ create: () => 0, add: (n) => n + 1, merge: (a, b) => a + b, result: (n) => n }).discard();
export default job.build();`;
    const stuck = await callJson<{ id: string }>('POST', `${url}/jobs`, { module: await uploadModule(url, stuckJob), parallelism: 1 });
    const page = await openPage();
    try {
      await page.goto(`${url}/#/jobs/${moving.id}`);
      await page.waitForSelector('g.stage[data-stage="window"][data-watermark]:not([data-watermark=""])', { timeout: 30_000 });
      const first = Number(await page.$eval('g.stage[data-stage="window"]', (g) => g.getAttribute('data-watermark')));
      await page.waitForFunction((w) => Number(document.querySelector('g.stage[data-stage="window"]')?.getAttribute('data-watermark')) > w, { timeout: 30_000 }, first);
      expect(await page.$eval('g.stage[data-stage="window"]', (g) => g.getAttribute('data-stuck'))).toBe('false');
      await page.goto(`${url}/#/jobs/${stuck.id}`);
      // Stuck once its watermark has not moved for 10 s of the job's running.
      await page.waitForSelector('g.stage.stuck[data-stage="window"][data-stuck="true"]', { timeout: 30_000 });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'watermark-stuck.png') });
    } finally {
      await page.close();
      for (const { id } of [moving, stuck]) await callJson('POST', `${url}/jobs/${id}/cancel`, {}).catch(() => undefined);
    }
    expect((await waitFor(url, moving.id)).state).toBe('CANCELED');
    expect((await waitFor(url, stuck.id)).state).toBe('CANCELED');
  }, 90_000);

  test("a running job's checkpoints view lists the completed checkpoint the REST API gives, with its size and mode, and the counts", async () => {
    const checkpoints = { interval: 500, timeout: 10_000, tolerableFailures: 10, directory: path.join(work, 'checkpoints') };
    const id = await submitJob(url, { job: 'nexmark-q0', params: { rate: 1000, sink: 'discard' }, parallelism: 2, checkpoints });
    const page = await openPage();
    try {
      const completed = await completedCheckpoint(url, id);
      await page.goto(`${url}/#/jobs/${id}`);
      const row = `table.checkpoints tr[data-checkpoint="${completed.id}"][data-status="COMPLETED"]`;
      await page.waitForSelector(row, { timeout: 30_000 });
      const cells = await page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent?.trim()));
      expect(cells[0]).toBe(String(completed.id));
      expect(cells[4], "its size, as the page writes bytes").toMatch(/^[\d.,]+ (B|KiB|MiB)$/);
      expect(cells[6]).toBe('aligned');
      expect(await page.$eval(row, (tr) => tr.getAttribute('data-unaligned'))).toBe('false');
      const shown = Number(await page.$eval('.checkpoint-counts', (p) => p.getAttribute('data-completed')));
      expect(shown, 'the page counts the checkpoint it lists').toBeGreaterThanOrEqual(1);
      expect(shown, 'and no more than the REST API counts by now').toBeLessThanOrEqual((await checkpointsOf(url, id)).counts.completed);
      await page.screenshot({ path: path.join(SCREENSHOTS, 'checkpoints.png') });
    } finally {
      await page.close();
      await callJson('POST', `${url}/jobs/${id}/cancel`, {}).catch(() => undefined);
    }
    expect((await waitFor(url, id)).state).toBe('CANCELED');
  }, 90_000);

  test('a job of three stages fits a window 1400 pixels wide: no stage, edge or part of the page runs past its right edge', async () => {
    const threeStages = `export default { name: 'three-stages', stages: [
      { name: 'generate-the-numbers', source: { kind: 'generate', generate: function* () { for (let i = 0; i < 1000; i++) yield [i % 10, i]; } } },
      { name: 'count-them-per-key', inputs: [{ from: 'generate-the-numbers', partitioning: { type: 'hash', key: (r) => r[0] } }], operators: [{ map: (r) => r }] },
      { name: 'collect-the-counts', inputs: [{ from: 'count-them-per-key', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } } ] };`;
    const id = await submitJob(url, { module: await uploadModule(url, threeStages), parallelism: 2 });
    expect((await waitFor(url, id)).state).toBe('FINISHED');
    const page = await openPage();
    try {
      await page.goto(`${url}/#/jobs/${id}`);
      await page.waitForFunction(() => document.querySelectorAll('g.stage').length === 3);
      // Read once, the layout as it stands: the graph, its stages and its edges, and the page's own width.
      const { viewport, pageWidth, parts } = await page.evaluate(() => ({
        viewport: document.documentElement.clientWidth,
        pageWidth: document.documentElement.scrollWidth,
        parts: Array.from(document.querySelectorAll('svg.graph, g.stage, g.edge'), (g) => ({ what: g.getAttribute('data-stage') ?? g.getAttribute('data-edge') ?? 'the graph', right: g.getBoundingClientRect().right })),
      }));
      expect(viewport).toBeLessThanOrEqual(1400);
      expect(pageWidth, 'the page does not run past the window sideways').toBeLessThanOrEqual(viewport);
      expect(parts.filter((p) => p.what !== 'the graph')).toHaveLength(5);
      for (const { what, right } of parts) expect(right, `${what} ends inside the window`).toBeLessThanOrEqual(viewport);
      await page.screenshot({ path: path.join(SCREENSHOTS, 'three-stages.png') });
    } finally {
      await page.close();
    }
  }, 60_000);
});

/** The UI under a locale no Intl constructor takes: POSIX's, which chromium reports as en-US@posix under LANG=C.UTF-8. */
describe('the web UI in chromium under LANG=C.UTF-8', () => {
  test('the overview, the jobs and a TaskManager with its charts render', async () => {
    const posix = await launchBrowser({ LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', LANGUAGE: '' });
    try {
      const page = await posix.browser.newPage();
      await page.setViewport({ width: 1400, height: 900 });
      expect(await page.evaluate(() => navigator.language), 'the browser reports POSIX\'s locale').toBe('en-US@posix');
      await page.evaluateOnNewDocument((token) => localStorage.setItem('spillway-token', token), cluster.secret.token);
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(String(error)));
      await page.goto(`${url}/#/`);
      await page.waitForFunction(() => document.querySelectorAll('.card').length > 0);
      await page.goto(`${url}/#/jobs`);
      await page.waitForSelector('tr[data-job]');
      const { taskmanagers } = await callJson<{ taskmanagers: { id: string }[] }>('GET', `${url}/taskmanagers`);
      await page.goto(`${url}/#/taskmanagers/${taskmanagers[0].id}`);
      await page.waitForFunction(() => document.querySelectorAll('.uplot').length === 3);
      expect(errors).toEqual([]);
    } finally {
      await posix.close();
    }
  }, 60_000);
});

/**
 * What /metrics costs a running job: the synthetic pipelined job while every
 * process's /metrics is scraped once a second (as a Prometheus server would),
 * in turns with the same job unscraped, on one cluster in the same run.
 */
import { authorizationHeader, callJson } from '../src/rpc/HttpClient.js';
import { runSynthetic, type BenchCluster, type SyntheticRun } from './cluster.js';
import { alternateRuns, formatCount, type Measured } from './measure.js';

/** A Prometheus server's usual scrape interval is longer; once a second is the load the target is set for. */
const SCRAPE_INTERVAL_MS = 1000;

export interface ScrapedRun extends SyntheticRun {
  /** Scrapes done during the run, over all processes. */
  scrapes: number;
  /** Bytes of Prometheus text read, over all scrapes. */
  scrapedBytes: number;
}

export interface ScrapingFigures {
  unscraped: Measured<SyntheticRun>;
  scraped: Measured<ScrapedRun>;
}

/** Scrapes the JobManager and every TaskManager every second until stopped. */
async function scraping(cluster: BenchCluster, during: () => Promise<SyntheticRun>): Promise<ScrapedRun> {
  const { taskmanagers } = await callJson<{ taskmanagers: { host: string; httpPort: number }[] }>('GET', `${cluster.url}/taskmanagers`);
  const targets = [cluster.url, ...taskmanagers.map((tm) => `http://${tm.host}:${tm.httpPort}`)];
  let scrapes = 0;
  let scrapedBytes = 0;
  const scrapeAll = async (): Promise<void> => {
    await Promise.all(
      targets.map(async (target) => {
        const response = await fetch(`${target}/metrics`, { headers: authorizationHeader(target) });
        if (!response.ok) throw new Error(`GET ${target}/metrics: ${response.status}`);
        scrapedBytes += (await response.arrayBuffer()).byteLength;
        scrapes++;
      }),
    );
  };
  let failure: unknown = null;
  const timer = setInterval(() => scrapeAll().catch((error: unknown) => (failure = error)), SCRAPE_INTERVAL_MS);
  try {
    const run = await during();
    if (failure !== null) throw failure;
    return { ...run, scrapes, scrapedBytes };
  } finally {
    clearInterval(timer);
  }
}

/**
 * Records of each run and runs of each kind: runs of several seconds, so that each sees
 * several scrapes (a run of 1.5 s saw one, and the ratio was the noise of the run).
 */
export const SCRAPING_FULL = { records: 20_000_000, repeats: 3 };
export const SCRAPING_QUICK = { records: 2_000_000, repeats: 1 };

/** The synthetic job unscraped and scraped, in turns, after a warm-up run (a quarter the size); exact results or the part fails. */
export async function measureScraping(cluster: BenchCluster, records: number, repeats: number): Promise<ScrapingFigures> {
  const exact = async (size = records): Promise<SyntheticRun> => {
    const { run } = await runSynthetic(cluster, size, 'pipelined');
    if (!run.exact) throw new Error(`synthetic ${formatCount(size)} records: the collected counts are not exact`);
    return run;
  };
  await exact(records / 4);
  const [unscraped, scraped] = await alternateRuns(
    repeats,
    { measure: () => exact(), key: (r) => r.recordsPerSec },
    { measure: () => scraping(cluster, () => exact()), key: (r) => r.recordsPerSec },
  );
  return { unscraped, scraped };
}

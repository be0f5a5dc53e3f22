/**
 * `npm run bench -- --only metrics [--quick]`: what /metrics costs a running job
 * (bench/metrics.ts): synthetic pipelined, 20 M records (quick: 2 M), while every
 * process's /metrics is scraped every second, in turns with the job unscraped, medians
 * of 3 (quick: 1). About 70 s on a slow machine; out of the default suite, which took
 * more than its 10 minutes with it there.
 */
import { withCluster } from '../cluster.js';
import { measureScraping, SCRAPING_FULL, SCRAPING_QUICK, type ScrapingFigures } from '../metrics.js';
import { printRows, scrapingRows } from '../suite.js';
import type { BenchSection } from './Section.js';

export const METRICS: BenchSection = {
  name: 'metrics',
  about: 'synthetic pipelined while /metrics of every process is scraped every second, in turns with it unscraped',
  async run(quick) {
    const { records, repeats } = quick ? SCRAPING_QUICK : SCRAPING_FULL;
    const figures: ScrapingFigures = await withCluster({}, (cluster) => measureScraping(cluster, records, repeats));
    printRows((rows, target) => scrapingRows(figures, rows, target));
    return figures;
  },
};

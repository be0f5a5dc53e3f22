import type { BenchSection } from './Section.js';

/** Every section `--only` can run, by name; a section is loaded only when it runs. */
export const SECTIONS: Record<string, () => Promise<BenchSection>> = {
  checkpoints: async () => (await import('./Checkpoints.js')).CHECKPOINTS,
  ha: async () => (await import('./Ha.js')).HA,
  cpu: async () => (await import('./Cpu.js')).CPU_SECTION,
  connectors: async () => (await import('./Connectors.js')).CONNECTORS,
  csv: async () => (await import('./CsvParsers.js')).CSV_PARSERS,
  managed: async () => (await import('./Managed.js')).MANAGED,
  metrics: async () => (await import('./Metrics.js')).METRICS,
  nexmark: async () => (await import('./Nexmark.js')).NEXMARK,
  'redis-pg': async () => (await import('./RedisPostgres.js')).REDIS_POSTGRES,
  scale: async () => (await import('./Scale.js')).SCALE,
  sql: async () => (await import('./Sql.js')).SQL,
  stages: async () => (await import('./Stages.js')).STAGES_SECTION,
  transport: async () => (await import('./Transport.js')).TRANSPORT,
};

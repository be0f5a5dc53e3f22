import { authorizationHeader } from '../../src/rpc/HttpClient.js';
import { RestClient } from '../../src/rest/RestClient.js';
import { taskManagerUrl } from '../../src/rpc/TaskManagerGateway.js';
// No types ship with it: its output is declared here, as the tests read it.
import parse from 'parse-prometheus-text-format';

export interface Family {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'HISTOGRAM' | 'UNTYPED';
  metrics: { value?: string; labels?: Record<string, string> }[];
}

/** GET url/metrics (with this process's token for it, as a Prometheus server sends its bearer token), checked to be Prometheus text by a parser of the format; families by name. */
export async function scrape(url: string): Promise<Map<string, Family>> {
  const response = await fetch(`${url}/metrics`, { headers: authorizationHeader(url) });
  if (!response.ok) throw new Error(`GET ${url}/metrics: ${response.status}`);
  const families = (parse as (text: string) => Family[])(await response.text());
  return new Map(families.map((family) => [family.name, family]));
}

/** The sum of a family's series whose labels include `match`. */
export function sum(family: Family | undefined, match: Record<string, string> = {}): number {
  return (family?.metrics ?? [])
    .filter((m) => Object.entries(match).every(([k, v]) => m.labels?.[k] === v))
    .reduce((total, m) => total + Number(m.value), 0);
}

export async function taskManagerUrls(url: string): Promise<string[]> {
  return (await new RestClient(url).taskManagers()).map((tm) => taskManagerUrl(tm));
}

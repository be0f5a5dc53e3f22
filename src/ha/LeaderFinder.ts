import { SpillwayError } from '../errors/Errors.js';
import { RestClient } from '../rest/RestClient.js';

/** How long one JobManager may take to say who leads. */
const ASK_TIMEOUT_MS = 1000;

/** The JobManager URLs of `--jobmanager URL1,URL2,...`, without trailing slashes. */
export function jobManagerUrls(list: string): string[] {
  return list
    .split(',')
    .map((url) => url.trim().replace(/\/$/, ''))
    .filter((url) => url !== '');
}

/**
 * The leader among `urls` (Flink's leader retrieval, here by asking): the first that
 * answers GET /overview as leader (a JobManager without HA leads at epoch 0), with its
 * epoch; undefined while none does (a change is under way). A standby's word for who
 * leads is not taken: the leader itself must answer, so that a dead one is not chosen.
 */
export async function findLeader(urls: readonly string[]): Promise<{ url: string; epoch: number } | undefined> {
  const answers = await Promise.all(
    urls.map((url) =>
      new RestClient(url).overview({ timeoutMs: ASK_TIMEOUT_MS }).then(
        (overview) => ({ url, overview }),
        () => undefined,
      ),
    ),
  );
  let best: { url: string; epoch: number } | undefined;
  for (const answer of answers) {
    if (answer === undefined || answer.overview.role !== 'leader') continue;
    const epoch = answer.overview.leader?.epoch ?? 0;
    // Two that both say they lead: the newer epoch does (the other is about to step down).
    if (best === undefined || epoch > best.epoch) best = { url: answer.url, epoch };
  }
  return best;
}

/** The leader among `urls`, asked again every `intervalMs` until one answers or `timeoutMs` passed; undefined then. */
export async function awaitLeader(urls: readonly string[], timeoutMs: number, intervalMs = 200): Promise<{ url: string; epoch: number } | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const leader = await findLeader(urls);
    if (leader !== undefined || Date.now() + intervalMs > deadline) return leader;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** How long a command waits for a leader among several JobManagers. */
const COMMAND_LEADER_TIMEOUT_MS = 30_000;

/**
 * The JobManager a command talks to: the one URL given, or the leader among several
 * (`--jobmanager URL1,URL2`), waited for while a change is under way; SPW_ERR_NO_LEADER
 * if none leads within 30 s.
 */
export async function leaderUrl(list: string): Promise<string> {
  const urls = jobManagerUrls(list);
  if (urls.length === 1) return urls[0];
  const leader = await awaitLeader(urls, COMMAND_LEADER_TIMEOUT_MS);
  if (leader === undefined) throw new SpillwayError('SPW_ERR_NO_LEADER', `none of the JobManagers ${urls.join(', ')} leads`);
  return leader.url;
}

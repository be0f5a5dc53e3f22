import type { PartitionType } from '../../network/partition/PartitionType.js';

/** An edge between two nodes (subtasks) that regions are drawn from. */
export interface RegionEdge {
  from: string;
  to: string;
  type: PartitionType;
}

/**
 * Pipelined regions (Flink's SchedulingPipelinedRegion): nodes joined by an edge whose
 * partition cannot be read again (pipelined) run and restart together: neither can run
 * again without the other. An edge whose partition can be read again (blocking,
 * sort-merge, hybrid) bounds a region; a hybrid consumer still starts at the first
 * buffer, since its partition is announced then. Returned in the
 * order of `nodes` (topological), each region's nodes in that order too.
 */
export function pipelinedRegions(nodes: readonly string[], edges: readonly RegionEdge[]): string[][] {
  const parent = new Map(nodes.map((s) => [s, s]));
  const find = (x: string): string => (parent.get(x) === x ? x : find(parent.get(x)!));
  for (const edge of edges) if (!edge.type.isReReadable) parent.set(find(edge.from), find(edge.to));
  const regions = new Map<string, string[]>();
  for (const node of nodes) {
    const root = find(node);
    regions.set(root, [...(regions.get(root) ?? []), node]);
  }
  return [...regions.values()];
}

/**
 * The regions to restart when the `failed` ones fail (Flink's
 * RestartPipelinedRegionFailoverStrategy): those, every unfinished region that reads
 * from a restarting one (its input is produced anew), and every region that produced
 * a lost partition a restarting one reads (produced anew too), until nothing more is
 * added. `regionOf(node)` is a node's region, `finished(r)` says every node of r
 * finished, `lost(edge)` that the partition an edge reads is gone with its TaskManager.
 */
export function regionsToRestart<E extends RegionEdge>(
  edges: readonly E[],
  regionOf: (node: string) => number,
  failed: Iterable<number>,
  finished: (region: number) => boolean,
  lost: (edge: E) => boolean,
): Set<number> {
  const links = edges.map((e) => ({ edge: e, producer: regionOf(e.from), consumer: regionOf(e.to) })).filter((l) => l.producer !== l.consumer);
  const restart = new Set(failed);
  for (let grew = true; grew; ) {
    grew = false;
    for (const { edge, producer, consumer } of links) {
      if (restart.has(producer) && !restart.has(consumer) && !finished(consumer)) restart.add(consumer);
      else if (restart.has(consumer) && !restart.has(producer) && lost(edge)) restart.add(producer);
      else continue;
      grew = true;
    }
  }
  return restart;
}

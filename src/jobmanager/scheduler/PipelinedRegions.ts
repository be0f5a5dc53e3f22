import type { PartitionType } from '../../network/networkThread/partition/PartitionType.js';

/**
 * Producers feeding consumers over one edge, each producer every consumer of the group
 * (Flink's ConsumedPartitionGroup with its ConsumerVertexGroup): an all-to-all edge is
 * one group, a forward edge one a pair. Regions are drawn over groups, so that their
 * cost is the number of nodes, never producers x consumers.
 */
export interface RegionEdge {
  from: readonly string[];
  to: readonly string[];
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
  const index = new Map(nodes.map((node, i) => [node, i]));
  const parent = Int32Array.from(nodes, (_, i) => i);
  const find = (x: number): number => {
    while (parent[x] !== x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const edge of edges) {
    if (edge.type.isReReadable) continue;
    const root = find(index.get(edge.from[0])!);
    for (const node of [edge.from, edge.to].flat()) parent[find(index.get(node)!)] = root;
  }
  const regions = new Map<number, string[]>();
  nodes.forEach((node, i) => {
    const root = find(i);
    const region = regions.get(root);
    if (region) region.push(node);
    else regions.set(root, [node]);
  });
  return [...regions.values()];
}

/**
 * The regions to restart when the `failed` ones fail (Flink's
 * RestartPipelinedRegionFailoverStrategy): those, every unfinished region that reads
 * from a restarting one (its input is produced anew), and every region that produced
 * a lost partition a restarting one reads (produced anew too), until nothing more is
 * added. `regionOf(node)` is a node's region, `finished(r)` says every node of r
 * finished, `lost(edge, i)` that the partition of the edge's producer `from[i]` is gone
 * with its TaskManager. Each pass costs the groups' nodes, not their pairs.
 */
export function regionsToRestart<E extends RegionEdge>(
  edges: readonly E[],
  regionOf: (node: string) => number,
  failed: Iterable<number>,
  finished: (region: number) => boolean,
  lost: (edge: E, producer: number) => boolean,
): Set<number> {
  const groups = edges.map((edge) => ({ edge, producers: edge.from.map(regionOf), consumers: [...new Set(edge.to.map(regionOf))] }));
  const restart = new Set(failed);
  let grew = true;
  const add = (region: number): void => {
    restart.add(region);
    grew = true;
  };
  while (grew) {
    grew = false;
    for (const { edge, producers, consumers } of groups) {
      if (producers.some((r) => restart.has(r))) for (const c of consumers) if (!restart.has(c) && !finished(c)) add(c);
      if (consumers.some((r) => restart.has(r))) producers.forEach((p, i) => !restart.has(p) && lost(edge, i) && add(p));
    }
  }
  return restart;
}

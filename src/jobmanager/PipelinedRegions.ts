import type { PartitionType } from '../network/partition/ResultPartition.js';

/** What scheduling and failover need to know of an edge's partition type. */
export interface ExchangeTraits {
  /** Consumable while produced: producer and consumer must run at the same time. */
  isPipelined: boolean;
  /** A finished partition can be read again: a restarted consumer does not need its producer to run again. */
  isReconsumable: boolean;
}

/** The one place where a partition type's name is turned into the traits that decide regions. */
export function exchangeTraits(type: PartitionType): ExchangeTraits {
  return type === 'pipelined' ? { isPipelined: true, isReconsumable: false } : { isPipelined: false, isReconsumable: true };
}

/** An edge between two nodes (subtasks) that regions are drawn from. */
export interface RegionEdge {
  from: string;
  to: string;
  type: PartitionType;
}

/**
 * Pipelined regions (Flink's SchedulingPipelinedRegion): nodes joined by an edge that
 * is pipelined, or whose finished partition cannot be read again, run and restart
 * together; every other edge (blocking, re-readable) bounds a region. Returned in the
 * order of `nodes` (topological), each region's nodes in that order too.
 */
export function pipelinedRegions(nodes: readonly string[], edges: readonly RegionEdge[]): string[][] {
  const parent = new Map(nodes.map((s) => [s, s]));
  const find = (x: string): string => (parent.get(x) === x ? x : find(parent.get(x)!));
  for (const edge of edges) {
    const traits = exchangeTraits(edge.type);
    if (traits.isPipelined || !traits.isReconsumable) parent.set(find(edge.from), find(edge.to));
  }
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

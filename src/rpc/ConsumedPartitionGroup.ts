import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { ConsumedPartitionGroup, DeflatedGroup, InputGateDescriptor, InputGateMessage, PartitionLocation, TaskDeploymentDescriptor, TaskDeploymentMessage } from './TaskDeployment.js';

/** One channel of a gate, expanded: the partition it reads and where it is (null until announced). */
export interface ChannelAddress {
  partitionId: string;
  location: PartitionLocation | null;
}

/** Encodes producers `first..first+attempts.length-1`, their attempts and locations, as a group. */
export function encodeGroup(prefix: string, first: number, attempts: readonly number[], locations: readonly (PartitionLocation | null)[]): ConsumedPartitionGroup {
  const distinct: PartitionLocation[] = [];
  const indexOf = new Map<string, number>();
  const key = (l: PartitionLocation): string => `${l.taskManagerId}\u0000${l.host}\u0000${l.dataPort}`;
  const index = locations.map((l) => {
    if (l === null) return -1;
    let i = indexOf.get(key(l));
    if (i === undefined) indexOf.set(key(l), (i = distinct.push(l) - 1));
    return i;
  });
  return { prefix, first, count: attempts.length, attempts: runs(attempts), locations: distinct, at: runs(index) };
}

/**
 * Past this size a group travels deflated: once its producers' locations are known, an
 * all-to-all group names every TaskManager that holds one, and each consumer's
 * deployment carries it (a TaskManager-side cache would carry it once a TaskManager).
 */
export const DEFLATE_GROUP_BYTES = 16 * 1024;

/** The group as deployments carry it: deflated past DEFLATE_GROUP_BYTES. Built once a group (and version) and shared. */
export function groupOnWire(group: ConsumedPartitionGroup): ConsumedPartitionGroup | DeflatedGroup {
  const json = JSON.stringify(group);
  return json.length <= DEFLATE_GROUP_BYTES ? group : { deflated: deflateRawSync(json).toString('base64') };
}

/** A group as it came, inflated if it was deflated. */
export function readGroup(group: ConsumedPartitionGroup | DeflatedGroup): ConsumedPartitionGroup {
  return 'deflated' in group ? (JSON.parse(inflateRawSync(Buffer.from(group.deflated, 'base64')).toString()) as ConsumedPartitionGroup) : group;
}

/** A deployment as a TaskManager runs it: each gate's channels expanded from its group. */
export function expandDeployment(message: TaskDeploymentMessage): TaskDeploymentDescriptor {
  return { ...message, inputs: message.inputs.map(expandGate) };
}

function expandGate(gate: InputGateMessage): InputGateDescriptor {
  return { exchange: gate.exchange, channels: expandGroup(readGroup(gate.group)).map((c) => ({ ...c, subpartition: gate.subpartition })) };
}

/** The group's channels in producer order. */
export function expandGroup(group: ConsumedPartitionGroup): ChannelAddress[] {
  const attempts = unrun(group.attempts, group.count);
  const at = unrun(group.at, group.count);
  return attempts.map((attempt, i) => ({ partitionId: `${group.prefix}${group.first + i}/${attempt}`, location: at[i] < 0 ? null : group.locations[at[i]] }));
}

function runs(values: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < values.length; ) {
    let j = i + 1;
    while (j < values.length && values[j] === values[i]) j++;
    out.push(values[i], j - i);
    i = j;
  }
  return out;
}

function unrun(encoded: readonly number[], count: number): number[] {
  const out = new Array<number>(count);
  let n = 0;
  for (let r = 0; r < encoded.length; r += 2) for (let k = 0; k < encoded[r + 1]; k++) out[n++] = encoded[r];
  return out;
}

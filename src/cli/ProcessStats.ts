import fs from 'node:fs';
import { SpillwayError } from '../errors/Errors.js';

/** What a process holds, read from /proc (Linux): for leak checks of cluster processes. */
export interface ProcessStats {
  /** Resident set size, bytes. */
  rss: number;
  /** Open file descriptors (files, sockets, pipes, epoll and event fds). */
  fds: number;
  threads: number;
}

/** The stats of a live process on Linux; throws if the process is gone or /proc is missing. */
export function processStats(pid: number): ProcessStats {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status);
    if (!match) throw new SpillwayError('SPW_ERR_PROCESS', `/proc/${pid}/status has no ${name}`);
    return Number(match[1]);
  };
  return { rss: field('VmRSS') * 1024, fds: fs.readdirSync(`/proc/${pid}/fd`).length, threads: field('Threads') };
}

/**
 * What each open descriptor of a process is (a path, `anon_inode:[eventfd]`, a TCP
 * socket as `tcp LOCALPORT->REMOTEPORT STATE`), for a message that names a leak.
 */
export function openDescriptors(pid: number): string[] {
  const dir = `/proc/${pid}/fd`;
  const sockets = tcpSockets(pid);
  return fs.readdirSync(dir).map((fd) => {
    try {
      const target = fs.readlinkSync(`${dir}/${fd}`);
      return sockets.get(/^socket:\[(\d+)\]$/.exec(target)?.[1] ?? '') ?? target;
    } catch {
      return 'closed meanwhile';
    }
  });
}

const TCP_STATES: Record<string, string> = { '01': 'ESTABLISHED', '06': 'TIME_WAIT', '08': 'CLOSE_WAIT', '0A': 'LISTEN' };

/** TCP sockets seen by a process, by inode (IPv4 and IPv6 tables). */
function tcpSockets(pid: number): Map<string, string> {
  const sockets = new Map<string, string>();
  for (const table of ['tcp', 'tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const port = (address: string): number => parseInt(address.split(':')[1], 16);
      sockets.set(fields[9], `tcp ${port(fields[1])}->${port(fields[2])} ${TCP_STATES[fields[3]] ?? fields[3]}`);
    }
  }
  return sockets;
}

/** Clock ticks a second of /proc/PID/stat's times (Linux's USER_HZ, 100 on every kernel Node runs on). */
const TICKS_PER_SECOND = 100;

/** CPU seconds a live process has used, user and kernel, from /proc/PID/stat; 0 if it is gone. */
export function processCpuSeconds(pid: number): number {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0;
  }
  // Fields after the command name (which may hold spaces), from the state on: utime is the 12th, stime the 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

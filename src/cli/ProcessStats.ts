import fs from 'node:fs';

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
    if (!match) throw new Error(`/proc/${pid}/status has no ${name}`);
    return Number(match[1]);
  };
  return { rss: field('VmRSS') * 1024, fds: fs.readdirSync(`/proc/${pid}/fd`).length, threads: field('Threads') };
}

/** What each open descriptor of a process is (`socket:[123]`, a path, `anon_inode:[eventfd]`), for a message that names a leak. */
export function openDescriptors(pid: number): string[] {
  const dir = `/proc/${pid}/fd`;
  return fs.readdirSync(dir).map((fd) => {
    try {
      return fs.readlinkSync(`${dir}/${fd}`);
    } catch {
      return 'closed meanwhile';
    }
  });
}

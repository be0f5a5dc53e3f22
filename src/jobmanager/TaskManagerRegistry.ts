/** A registered TaskManager as the JobManager sees it. */
export interface TaskManagerInfo {
  id: string;
  host: string;
  dataPort: number;
  httpPort: number;
  /** Its REST API is served over https. */
  https?: boolean;
  slots: number;
  freeSlots: number;
  memory: number;
  lastHeartbeat: number;
  registered: number;
}

export type Registration = Pick<TaskManagerInfo, 'host' | 'dataPort' | 'httpPort' | 'https' | 'slots' | 'memory'>;

/**
 * The TaskManagers of the cluster: registration, heartbeats, slots, and the loss of
 * one that stays silent longer than the heartbeat timeout.
 */
export class TaskManagerRegistry {
  private readonly taskManagers = new Map<string, TaskManagerInfo>();
  private next = 1;
  private readonly checker: NodeJS.Timeout;

  constructor(
    readonly heartbeatTimeoutMs: number,
    private readonly onLost: (tm: TaskManagerInfo, reason: string) => void,
  ) {
    this.checker = setInterval(() => this.checkHeartbeats(), Math.min(1000, heartbeatTimeoutMs / 4));
    this.checker.unref();
  }

  register(registration: Registration): TaskManagerInfo {
    // Zero-padded so that sorting ids sorts by registration.
    const id = `tm-${String(this.next++).padStart(4, '0')}`;
    const now = Date.now();
    const info: TaskManagerInfo = { ...registration, id, freeSlots: registration.slots, lastHeartbeat: now, registered: now };
    this.taskManagers.set(id, info);
    return info;
  }

  heartbeat(id: string): boolean {
    const tm = this.taskManagers.get(id);
    if (!tm) return false;
    tm.lastHeartbeat = Date.now();
    return true;
  }

  get(id: string): TaskManagerInfo | undefined {
    return this.taskManagers.get(id);
  }

  /** Sorted by id: the order deterministic placement counts in. */
  sorted(): TaskManagerInfo[] {
    return [...this.taskManagers.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  get totalSlots(): number {
    return this.sorted().reduce((sum, tm) => sum + tm.slots, 0);
  }

  close(): void {
    clearInterval(this.checker);
  }

  private checkHeartbeats(): void {
    const now = Date.now();
    for (const tm of [...this.taskManagers.values()]) {
      if (now - tm.lastHeartbeat > this.heartbeatTimeoutMs) {
        this.taskManagers.delete(tm.id);
        this.onLost(tm, `taskmanager ${tm.id} (${tm.host}:${tm.dataPort}) lost: no heartbeat for ${this.heartbeatTimeoutMs} ms`);
      }
    }
  }
}

import { Fence } from '../../ha/Fence.js';
import type { Registration } from '../../rpc/ControlPlane.js';
import { TaskManagerGateway } from '../../rpc/TaskManagerGateway.js';

/** How long a suspect TaskManager has to answer its check before it is declared lost. */
export const SUSPECT_CHECK_TIMEOUT_MS = 2000;

/** A registered TaskManager as the JobManager sees it. */
export interface TaskManagerInfo extends Registration {
  id: string;
  freeSlots: number;
  lastHeartbeat: number;
  registered: number;
}

/**
 * The TaskManagers of the cluster: registration, heartbeats, slots, and the loss of
 * one. A TaskManager is lost when it stays silent longer than the heartbeat timeout,
 * or at once when it is suspect (a call to it could not connect, a peer lost its data
 * connection to it) and does not answer a check. Nothing is placed on a suspect one.
 */
export class TaskManagerRegistry {
  private readonly taskManagers = new Map<string, TaskManagerInfo>();
  /** TaskManagers being checked, by id. */
  private readonly suspects = new Set<string>();
  private next = 1;
  private readonly checker: NodeJS.Timeout;

  constructor(
    readonly heartbeatTimeoutMs: number,
    /** `stopped`: it said it stops; otherwise it was lost. */
    private readonly onLost: (tm: TaskManagerInfo, reason: string, stopped: boolean) => void,
    /** This JobManager's leadership: every message to a TaskManager carries its epoch, and none is sent without it. */
    readonly fence: Fence = Fence.always(),
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

  /** The TaskManager whose data server listens at host:port. */
  byDataAddress(host: string, port: number): TaskManagerInfo | undefined {
    return [...this.taskManagers.values()].find((tm) => tm.host === host && tm.dataPort === port);
  }

  /** A TaskManager as this JobManager calls it: fenced by its leadership. */
  gateway(tm: Pick<TaskManagerInfo, 'host' | 'httpPort' | 'https'>): TaskManagerGateway {
    return new TaskManagerGateway(tm, this.fence);
  }

  /** Forgets every TaskManager, telling nobody: this JobManager stepped down, and they register with the next leader. */
  clear(): void {
    this.taskManagers.clear();
    this.suspects.clear();
  }

  isSuspect(id: string): boolean {
    return this.suspects.has(id);
  }

  /** Registered and not suspect: where tasks may go. */
  available(): TaskManagerInfo[] {
    return this.sorted().filter((tm) => !this.suspects.has(tm.id));
  }

  /**
   * Checks a TaskManager something failed to reach: its HTTP must answer within
   * SUSPECT_CHECK_TIMEOUT_MS, or it is declared lost now rather than at the heartbeat timeout.
   */
  suspect(id: string, reason: string): void {
    const tm = this.taskManagers.get(id);
    if (!tm || this.suspects.has(id)) return;
    this.suspects.add(id);
    this.gateway(tm).status(SUSPECT_CHECK_TIMEOUT_MS).then(
      () => {
        this.suspects.delete(id);
        // It answers: alive, however late its heartbeats; the next timeout counts from here.
        tm.lastHeartbeat = Math.max(tm.lastHeartbeat, Date.now());
      },
      (error: Error) => {
        this.suspects.delete(id);
        this.lose(tm, `taskmanager ${tm.id} (${tm.host}:${tm.dataPort}) lost: ${reason}; it does not answer (${error.message})`);
      },
    );
  }

  /** A TaskManager that stops says so: it leaves now, and a peer's report of its closed connections finds nobody to check. */
  deregister(id: string): boolean {
    const tm = this.taskManagers.get(id);
    if (!tm) return false;
    this.lose(tm, `taskmanager ${tm.id} (${tm.host}:${tm.dataPort}) stopped`, true);
    return true;
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

  /**
   * A TaskManager whose heartbeats are overdue is a suspect, lost only if its HTTP does not
   * answer either: on a loaded machine heartbeats have come over 8 s late from TaskManagers
   * that were working (or waited in this process, busy itself), and a job lost its tasks for it.
   */
  private checkHeartbeats(): void {
    const now = Date.now();
    for (const tm of [...this.taskManagers.values()]) {
      if (now - tm.lastHeartbeat > this.heartbeatTimeoutMs) this.suspect(tm.id, `no heartbeat for ${this.heartbeatTimeoutMs} ms`);
    }
  }

  private lose(tm: TaskManagerInfo, reason: string, stopped = false): void {
    if (this.taskManagers.get(tm.id) !== tm) return;
    this.taskManagers.delete(tm.id);
    this.onLost(tm, reason, stopped);
  }
}

/** The leader as the store has it: where it is reached, its fencing epoch, and since when it leads (epoch ms). */
export interface LeaderInfo {
  url: string;
  epoch: number;
  since: number;
}

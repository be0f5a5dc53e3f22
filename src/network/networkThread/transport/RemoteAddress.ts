/** Where a TaskManager's data server listens. */
export interface RemoteAddress {
  host: string;
  port: number;
}

/** host:port, as error messages name a TaskManager. */
export function formatAddress(address: RemoteAddress): string {
  return `${address.host}:${address.port}`;
}

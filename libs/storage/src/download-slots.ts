import type { ServerResponse } from 'http';

/** Which cap refused a download: its client network's share, or the replica's. */
export type DownloadRefusal = 'network' | 'replica';

/** The caps of public downloads served at once by a replica (see BaseConfig). */
export interface DownloadCaps {
  DOWNLOADS_PER_NETWORK: number;
  DOWNLOADS_IN_FLIGHT_MAX: number;
}

/**
 * Public downloads (membership's /files, the gateway's /cdn/images) a replica serves at once. Each holds a socket of
 * the storage's download pool (S3Storage's `downloadSockets`, as many as the replica cap) or a file descriptor until
 * its client has taken it or is cut (serve-object.ts): without a cap, 50 clients of one address reading nothing held
 * every S3 socket of the replica for REQUEST_TIMEOUT_MS at a time. One client network (its limit key: an IPv4 address,
 * an IPv6 network of RATE_LIMIT_IPV6_PREFIX bits) holds at most DOWNLOADS_PER_NETWORK of them. Counted in this replica's
 * memory: the sockets are its own.
 */
export class DownloadSlots {
  private readonly perNetwork = new Map<string, number>();
  private total = 0;

  constructor(private readonly caps: DownloadCaps) {}

  /**
   * Takes a slot for the download `res` answers to a client of `network`, given back when `res` finishes or closes;
   * or says which cap refuses it (nothing taken).
   */
  take(network: string, res: ServerResponse): DownloadRefusal | null {
    const ofNetwork = this.perNetwork.get(network) ?? 0;
    if (ofNetwork >= this.caps.DOWNLOADS_PER_NETWORK) return 'network';
    if (this.total >= this.caps.DOWNLOADS_IN_FLIGHT_MAX) return 'replica';
    this.perNetwork.set(network, ofNetwork + 1);
    this.total++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perNetwork.get(network) ?? 1) - 1;
      if (left > 0) this.perNetwork.set(network, left);
      else this.perNetwork.delete(network);
    };
    res.once('finish', release);
    res.once('close', release);
    // A client gone before the listeners were attached: 'close' came already.
    if (res.closed || res.destroyed) release();
    return null;
  }

  /** Downloads being served by this replica (for tests). */
  get inFlight(): number {
    return this.total;
  }
}

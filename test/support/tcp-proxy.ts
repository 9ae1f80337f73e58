import * as net from 'net';

/** A TCP pass-through that a test can cut and restore, to make a dependency unreachable for real. */
export class TcpProxy {
  private server?: net.Server;
  private sockets = new Set<net.Socket>();
  private cut?: { after: string; done: () => void };
  port = 0;
  /** Bytes the clients sent the target, and the target sent back, through this proxy so far. */
  bytesToTarget = 0;
  bytesFromTarget = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = this.port): Promise<number> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      this.forward(client, upstream);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.port;
  }

  /**
   * Once: on a connection where the client sent `after` (PostgreSQL protocol), the server's reply
   * that ends its transaction (ReadyForQuery, idle) is swallowed and the connection cut, so the
   * client never learns that its commit went through.
   */
  cutAfterCommit(after: string): Promise<void> {
    return new Promise((done) => (this.cut = { after, done }));
  }

  private forward(client: net.Socket, upstream: net.Socket): void {
    const idle = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]); // 'Z', length 5, 'I'
    let armed = false;
    client.on('data', (b: Buffer) => {
      this.bytesToTarget += b.length;
      if (this.cut && b.includes(this.cut.after)) armed = true;
      upstream.write(b);
    });
    upstream.on('data', (b: Buffer) => {
      this.bytesFromTarget += b.length;
      if (armed && this.cut && b.includes(idle)) {
        const { done } = this.cut;
        this.cut = undefined;
        client.destroy();
        upstream.destroy();
        return done();
      }
      client.write(b);
    });
  }

  /** Refuses new connections and drops open ones. */
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }
}

/** Rewrites a postgres URL to go through a proxy on 127.0.0.1:port. */
export function viaProxy(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

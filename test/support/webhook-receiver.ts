import { randomBytes } from 'crypto';
import { createServer, IncomingMessage, Server } from 'http';
import type { AddressInfo } from 'net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedEvent {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, any>;
}

/**
 * A webhook receiver on loopback as a real one is written: every request's signature is verified with
 * the `standardwebhooks` library (a bad one is a test failure, answered 401), and the first 2xx answer
 * for a webhook-id counts the event (its idempotency check). `mode` makes it fail (500), refuse
 * connections (closed) or hold requests open (hang) for a while.
 */
export class WebhookReceiver {
  readonly events: ReceivedEvent[] = [];
  readonly badSignatures: string[] = [];
  /** Requests per webhook-id, including failed and held ones. */
  readonly requests = new Map<string, number>();
  /** The most requests of one webhook-id in flight at once. */
  maxConcurrentPerId = 0;
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  /** Milliseconds each accepted request is held before its answer (to make overlaps visible). */
  delayMs = 0;
  private readonly inFlight = new Map<string, number>();
  private readonly held = new Set<() => void>();
  private server!: Server;
  private verifier!: Webhook;
  url = '';
  /**
   * A path of its own: a loopback port is reused by the next receiver once this one closes, and an app of another
   * test file still delivering to its own (closed) receiver's URL would reach that one, signed with another secret
   * (a bad signature in a test that did nothing wrong). Such a request is answered 404 and counted nowhere.
   */
  private readonly path = `/hook/${randomBytes(8).toString('hex')}`;
  /** Requests to another path (another receiver's deliveries on a reused port). */
  strays = 0;

  setSecret(secret: string): void {
    this.verifier = new Webhook(secret);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 120_000; // as test/support/upstreams/fake-upstream.ts says why
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${this.path}`;
    return this;
  }

  /** Ids of held requests' events (mode 'hang'). */
  get holding(): number {
    return this.held.size;
  }

  of(type: string): ReceivedEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  private async handle(req: IncomingMessage, res: import('http').ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.url !== this.path) {
      this.strays++;
      res.writeHead(404).end();
      return;
    }
    const body = Buffer.concat(chunks).toString('utf8');
    const id = String(req.headers['webhook-id']);
    this.requests.set(id, (this.requests.get(id) ?? 0) + 1);
    let payload: any;
    try {
      payload = this.verifier.verify(body, req.headers as Record<string, string>);
    } catch (e) {
      this.badSignatures.push(`${id}: ${(e as Error).message}`);
      res.writeHead(401).end();
      return;
    }
    const now = (this.inFlight.get(id) ?? 0) + 1;
    this.inFlight.set(id, now);
    this.maxConcurrentPerId = Math.max(this.maxConcurrentPerId, now);
    try {
      if (this.mode === 'hang') {
        await new Promise<void>((resolve) => {
          this.held.add(resolve);
          req.socket.once('close', () => {
            this.held.delete(resolve);
            resolve();
          });
        });
        return;
      }
      if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
      if (this.mode === 'fail') {
        res.writeHead(500).end('down');
        return;
      }
      if (!this.events.some((e) => e.id === id))
        this.events.push({ id, type: payload.type, timestamp: payload.timestamp, data: payload.data });
      res.writeHead(204).end();
    } finally {
      this.inFlight.set(id, (this.inFlight.get(id) ?? 1) - 1);
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

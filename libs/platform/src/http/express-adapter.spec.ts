import * as http from 'http';
import type { AddressInfo } from 'net';
import { PlatformExpressAdapter } from './express-adapter';

describe('PlatformExpressAdapter.close', () => {
  it('ends a keep-alive connection that was still answering when the server closed, instead of keeping it for keepAliveTimeout', async () => {
    const adapter = new PlatformExpressAdapter();
    let release!: () => void;
    const answering = new Promise<void>((r) => (release = r));
    let arrived!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    adapter.getInstance().get('/slow', (_req: unknown, res: http.ServerResponse) => {
      arrived();
      void answering.then(() => res.end('done'));
    });
    adapter.initHttpServer({});
    const server = adapter.getHttpServer() as http.Server;
    server.keepAliveTimeout = 65_000; // as configureHttpApp sets it
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const agent = new http.Agent({ keepAlive: true });
    try {
      const answer = new Promise<{ body: string; connection?: string }>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/slow', agent }, (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ body, connection: res.headers.connection }));
          })
          .on('error', reject);
      });
      await inFlight;
      let closed = false;
      const closing = Promise.resolve(adapter.close()).then(() => (closed = true));
      release();
      expect(await answer).toEqual({ body: 'done', connection: expect.any(String) });
      // Without the fix close() resolves only after keepAliveTimeout (65 s): Jest's 5 s timeout fails the test.
      await closing;
      expect(closed).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('answers requests arriving on a kept-alive connection after close with Connection: close', async () => {
    const adapter = new PlatformExpressAdapter();
    adapter.getInstance().get('/p', (_req: unknown, res: http.ServerResponse) => res.end('ok'));
    adapter.initHttpServer({});
    const server = adapter.getHttpServer() as http.Server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const seen: string[] = [];
    // The request is handled while the adapter is closing (close() called from inside the handler chain's first step).
    server.prependListener('request', () => void adapter.close());
    await new Promise<void>((resolve, reject) => {
      http
        .get(
          {
            host: '127.0.0.1',
            port: (server.address() as AddressInfo).port,
            path: '/p',
            headers: { connection: 'keep-alive' },
          },
          (res) => {
            seen.push(String(res.headers.connection));
            res.resume();
            res.on('end', resolve);
          },
        )
        .on('error', reject);
    });
    expect(seen).toEqual(['close']);
  });
});

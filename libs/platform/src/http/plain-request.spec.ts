import http from 'http';
import type { AddressInfo } from 'net';
import express from 'express';
import { asExpress, expressClientIp } from './plain-request';

/** Serves with a plain Node listener in front of an Express app, as the lean paths do. */
async function withServer(trust: boolean | number | string, fn: (url: string) => Promise<void>): Promise<void> {
  const app = express();
  app.set('trust proxy', trust);
  app.get('/express', (req, res) => res.json({ ip: req.ip }));
  const server = http.createServer((req, res) => {
    if (req.url === '/plain') {
      const ip = expressClientIp(req, app);
      const ownProto = Object.getPrototypeOf(req) === http.IncomingMessage.prototype;
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ ip, ownProto }));
    }
    if (req.url === '/converted') {
      asExpress(req, res, app);
      return (res as any).status(418).json({ ip: (req as any).ip });
    }
    app(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    await new Promise((r) => server.close(r));
  }
}

const FORWARDED = [undefined, '203.0.113.7', '198.51.100.1, 10.0.0.2', '203.0.113.9, 198.51.100.4, 127.0.0.1', 'not-an-ip'];

describe('expressClientIp / asExpress', () => {
  for (const trust of [false, true, 1, 2, 'loopback', '10.0.0.0/8, 127.0.0.1']) {
    it(`gives what Express's req.ip gives (trust proxy ${JSON.stringify(trust)})`, async () => {
      await withServer(trust, async (url) => {
        for (const xff of FORWARDED) {
          const headers: Record<string, string> = xff ? { 'x-forwarded-for': xff } : {};
          const viaExpress = await (await fetch(`${url}/express`, { headers })).json();
          const plain = await (await fetch(`${url}/plain`, { headers })).json();
          expect(plain).toEqual({ ip: viaExpress.ip, ownProto: true });
        }
      });
    });
  }

  it('asExpress gives the pair Express methods (res.status().json(), req.ip) for error answers', async () => {
    await withServer('loopback', async (url) => {
      const res = await fetch(`${url}/converted`, { headers: { 'x-forwarded-for': '203.0.113.7' } });
      expect(res.status).toBe(418);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ ip: '203.0.113.7' });
    });
  });
});

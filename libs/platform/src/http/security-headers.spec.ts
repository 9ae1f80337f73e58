import http from 'http';
import type { AddressInfo } from 'net';
import helmet from 'helmet';
import { HELMET_OPTIONS, securityHeaders } from './security-headers';

describe('securityHeaders', () => {
  it('lists exactly the headers helmet sends on a real response', async () => {
    const mw = helmet(HELMET_OPTIONS);
    const server = http.createServer((req, res) => mw(req as any, res as any, () => res.end('ok')));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      const captured = securityHeaders();
      expect(captured.length).toBeGreaterThan(5);
      for (const [name, value] of captured) expect(res.headers.get(name)).toBe(value);
      const sent = [...res.headers.keys()].filter(
        (h) => !['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length'].includes(h),
      );
      expect(sent.sort()).toEqual(captured.map(([n]) => n.toLowerCase()).sort());
    } finally {
      server.close();
    }
  });
});

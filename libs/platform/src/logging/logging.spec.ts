import * as http from 'http';
import type { AddressInfo } from 'net';
import { AccessLog, AccessLogEntry } from './logging';

function capture() {
  const lines: string[] = [];
  return { lines, stream: { write: (s: string) => void lines.push(s) } };
}

const sameTime = (line: string) => line.replace(/"time":\d+/, '"time":0');

describe('AccessLog', () => {
  it('writes the same bytes pino writes for an access entry', () => {
    const { lines, stream } = capture();
    const log = new AccessLog('info', 'ai-gateway', stream);
    const entries: Array<[AccessLogEntry, 'info' | 'warn', string]> = [
      [
        {
          req: { id: 'r-1', method: 'POST', url: '/v1/chat/completions', remoteAddress: '127.0.0.1' },
          res: { statusCode: 200 },
          responseTime: 3,
        },
        'info',
        'request completed',
      ],
      [
        {
          req: { id: 'r"2\\', method: undefined, url: '/ü/"x"', remoteAddress: undefined },
          res: { statusCode: null },
          responseTime: 0,
        },
        'warn',
        'request aborted',
      ],
    ];
    for (const [entry, level, msg] of entries) {
      log.logger[level](entry, msg);
      (log as any).write(level, entry, msg);
      expect(lines).toHaveLength(2);
      expect(sameTime(lines[1])).toBe(sameTime(lines[0]));
      expect(JSON.parse(lines[1])).toMatchObject({ app: 'ai-gateway', msg });
      lines.length = 0;
    }
  });

  it('logs a served request once, with its status, and nothing below the level', async () => {
    const { lines, stream } = capture();
    const log = new AccessLog('info', 'membership', stream);
    const quiet = new AccessLog('error', 'membership', stream);
    const server = http.createServer((req, res) => {
      log.watch(req, res, 'id-1', '/api/x?token=secret');
      quiet.watch(req, res, 'id-1', '/api/x');
      res.statusCode = req.url === '/missing' ? 404 : 200;
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await (await fetch(`${base}/`)).text();
      await (await fetch(`${base}/missing`)).text();
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      server.close();
    }
    const parsed = lines.map((l) => JSON.parse(l));
    expect(parsed).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'request completed',
        req: expect.objectContaining({ id: 'id-1', method: 'GET', url: '/api/x' }),
        res: { statusCode: 200 },
      }),
      expect.objectContaining({ level: 40, msg: 'request completed', res: { statusCode: 404 } }),
    ]);
  });
});

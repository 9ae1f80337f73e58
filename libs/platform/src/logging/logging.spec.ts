import fs from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import { ACCESS_LOG_BUFFER_BYTES, ACCESS_LOG_FLUSH_MS, AccessLog, AccessLogEntry } from './logging';

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

  it('writes its lines to stdout a buffer at a time, on the event loop, and the rest within ACCESS_LOG_FLUSH_MS and at shutdown', () => {
    jest.useFakeTimers();
    const writeSync = fs.writeSync;
    const written: string[] = [];
    const other = jest.fn();
    const spy = jest.spyOn(fs, 'writeSync').mockImplementation((fd: number, data: unknown, ...rest: unknown[]) => {
      if (fd !== 1) return (writeSync as (...a: unknown[]) => number)(fd, data, ...rest);
      written.push(String(data));
      return Buffer.byteLength(String(data));
    });
    const write = jest.spyOn(fs, 'write').mockImplementation(other);
    try {
      const log = new AccessLog('info', 'ai-gateway');
      const line = (i: number) =>
        (log as any).write(
          'info',
          {
            req: { id: `r-${i}`, method: 'POST', url: '/v1/chat/completions', remoteAddress: '127.0.0.1' },
            res: { statusCode: 200 },
            responseTime: 1,
          },
          'request completed',
        );
      line(0);
      // One line is kept, not written.
      expect(written).toEqual([]);
      for (let i = 1; i < 100; i++) line(i);
      // ~20 KB of lines: a few writes of at least the buffer's size each, not one per line.
      expect(written.length).toBeGreaterThanOrEqual(3);
      expect(written.length).toBeLessThanOrEqual(6);
      for (const w of written) expect(Buffer.byteLength(w)).toBeGreaterThanOrEqual(ACCESS_LOG_BUFFER_BYTES);
      const batches = written.length;
      // What is left goes within the flush interval...
      jest.advanceTimersByTime(ACCESS_LOG_FLUSH_MS);
      expect(written.length).toBe(batches + 1);
      // ...and at shutdown, whatever came since.
      line(100);
      log.onApplicationShutdown();
      const lines = written.join('').trimEnd().split('\n');
      expect(lines.map((l) => JSON.parse(l).req.id)).toEqual(Array.from({ length: 101 }, (_, i) => `r-${i}`));
      // Never through Node's thread pool.
      expect(other).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
      write.mockRestore();
      jest.useRealTimers();
    }
  });
});

import fs from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import {
  ACCESS_LOG_BUFFER_BYTES,
  ACCESS_LOG_FLUSH_MS,
  ACCESS_LOG_MAX_BYTES,
  AccessLog,
  AccessLogEntry,
  BufferedLines,
} from './logging';

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
      // A line kept goes within the flush interval...
      line(100);
      expect(written.length).toBe(batches);
      jest.advanceTimersByTime(ACCESS_LOG_FLUSH_MS);
      expect(written.length).toBe(batches + 1);
      // ...and at shutdown, whatever came since.
      line(101);
      log.onApplicationShutdown();
      expect(written.length).toBe(batches + 2);
      const lines = written.join('').trimEnd().split('\n');
      expect(lines.map((l) => JSON.parse(l).req.id)).toEqual(Array.from({ length: 102 }, (_, i) => `r-${i}`));
      // Never through Node's thread pool.
      expect(other).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
      write.mockRestore();
      jest.useRealTimers();
    }
  });

  describe('BufferedLines', () => {
    const FD = 99;
    /** A descriptor that takes what `take` says (bytes, or an error code), writing what it took to `out`. */
    function descriptor(take: (bytes: Buffer) => number | string) {
      const out: string[] = [];
      const spy = jest.spyOn(fs, 'writeSync').mockImplementation(((fd: number, data: Buffer) => {
        if (fd !== FD) throw new Error(`unexpected descriptor ${fd}`);
        const n = take(data);
        if (typeof n === 'string') throw Object.assign(new Error(n), { code: n });
        out.push(data.subarray(0, n).toString());
        return n;
      }) as unknown as typeof fs.writeSync);
      return { out, restore: () => spy.mockRestore() };
    }
    const line = (i: number) => `{"n":${i}}\n`;

    it('never waits for a full pipe: what it does not take (EAGAIN, or a part) goes at the next flush, in order', () => {
      let full = true;
      const d = descriptor((b) => (full ? 'EAGAIN' : Math.min(b.length, 10)));
      try {
        const lines = new BufferedLines(FD, 'ai-gateway');
        for (let i = 0; i < 5; i++) lines.write(line(i));
        expect(() => lines.flush()).not.toThrow();
        expect(d.out).toEqual([]);
        full = false;
        // 10 bytes a write: a flush writes one piece of what is held, the next the following piece.
        lines.flush();
        expect(d.out.join('')).toBe(line(0).padEnd(10, line(1)).slice(0, 10));
        for (let i = 0; i < 10; i++) lines.flush();
        lines.write(line(5));
        for (let i = 0; i < 10; i++) lines.flush();
        expect(d.out.join('')).toBe([0, 1, 2, 3, 4, 5].map(line).join(''));
      } finally {
        d.restore();
      }
    });

    it('keeps at most ACCESS_LOG_MAX_BYTES while stdout takes nothing, and says how many lines it dropped', () => {
      let full = true;
      const d = descriptor((b) => (full ? 'EAGAIN' : b.length));
      try {
        const lines = new BufferedLines(FD, 'ai-gateway');
        const big = `${'x'.repeat(1023)}\n`;
        const fits = ACCESS_LOG_MAX_BYTES / big.length;
        for (let i = 0; i < fits + 100; i++) lines.write(big);
        full = false;
        lines.flush();
        lines.flush();
        const written = d.out.join('').split('\n').filter(Boolean);
        expect(written.filter((l) => l === big.trimEnd()).length).toBeLessThanOrEqual(fits);
        const dropped = written.filter((l) => l !== big.trimEnd());
        expect(dropped).toHaveLength(1);
        expect(JSON.parse(dropped[0])).toMatchObject({ level: 40, app: 'ai-gateway' });
        const n = Number(/(\d+) access lines dropped/.exec(JSON.parse(dropped[0]).msg)![1]);
        expect(n + written.length - 1).toBe(fits + 100);
      } finally {
        d.restore();
      }
    });

    it('takes no more lines once the descriptor failed otherwise (a closed pipe), without throwing', () => {
      let calls = 0;
      const d = descriptor(() => (calls++, 'EPIPE'));
      try {
        const lines = new BufferedLines(FD, 'ai-gateway');
        lines.write(line(0));
        expect(() => lines.flush()).not.toThrow();
        lines.write(line(1));
        lines.flush();
        expect(calls).toBe(1);
      } finally {
        d.restore();
      }
    });
  });
});

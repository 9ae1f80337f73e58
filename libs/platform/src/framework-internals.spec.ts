// Fails loudly when Express or Node's http server change what framework-internals.ts relies on.
// (pgPoolOf needs a real database: test/platform/http-pipeline.e2e-spec.ts.)
import * as http from 'http';
import type { AddressInfo } from 'net';
import express from 'express';
import { enableHeadHooks, headHeaders, expressShapedClasses, onHead } from './framework-internals';

type Handler = (app: express.Express) => http.RequestListener;

/** A real Express app behind `http.createServer(expressShapedClasses(app), listener)`. */
async function serve(
  setup: (app: express.Express) => void,
  listener: Handler = (app) => app,
): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  setup(app);
  const server = http.createServer(expressShapedClasses(app), listener(app));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('expressShapedClasses', () => {
  it("requests and responses are born with Express's prototypes, and app.handle leaves them there", async () => {
    const seen: Record<string, boolean> = {};
    const s = await serve(
      (app) =>
        app.get('/p', (req, res) => {
          seen.reqInHandler = Object.getPrototypeOf(req) === app.request;
          seen.resInHandler = Object.getPrototypeOf(res) === app.response;
          res.json({ ok: true });
        }),
      (app) => (req, res) => {
        // Before Express touches them: already Express-shaped, still Node's classes underneath.
        seen.reqBorn = Object.getPrototypeOf(req) === app.request;
        seen.resBorn = Object.getPrototypeOf(res) === app.response;
        seen.nodeReq = req instanceof http.IncomingMessage;
        seen.nodeRes = res instanceof http.ServerResponse;
        const [reqProto, resProto] = [Object.getPrototypeOf(req), Object.getPrototypeOf(res)];
        app(req, res);
        seen.reqUnchanged = Object.getPrototypeOf(req) === reqProto;
        seen.resUnchanged = Object.getPrototypeOf(res) === resProto;
      },
    );
    try {
      const r = await fetch(`${s.url}/p`);
      expect(await r.json()).toEqual({ ok: true });
      expect(seen).toEqual({
        reqBorn: true,
        resBorn: true,
        nodeReq: true,
        nodeRes: true,
        reqInHandler: true,
        resInHandler: true,
        reqUnchanged: true,
        resUnchanged: true,
      });
    } finally {
      await s.close();
    }
  });

  it("req.ip honours the app's trust proxy setting with X-Forwarded-For", async () => {
    const cases: Array<[boolean | number | string, string | undefined, string]> = [
      [false, '203.0.113.7', '127.0.0.1'],
      [true, '198.51.100.1, 203.0.113.7', '198.51.100.1'],
      [1, '198.51.100.1, 203.0.113.7', '203.0.113.7'],
      ['loopback', '203.0.113.9', '203.0.113.9'],
      ['loopback', undefined, '127.0.0.1'],
    ];
    for (const [trust, xff, ip] of cases) {
      const s = await serve((app) => {
        app.set('trust proxy', trust);
        app.get('/ip', (req, res) => res.json({ ip: req.ip?.replace(/^::ffff:/, '') }));
      });
      try {
        const body = await (await fetch(`${s.url}/ip`, { headers: xff ? { 'x-forwarded-for': xff } : {} })).json();
        expect({ trust, xff, ip: body.ip }).toEqual({ trust, xff, ip });
      } finally {
        await s.close();
      }
    }
  });
});

describe('enableHeadHooks / onHead', () => {
  /** Each route registers a hook (recording whether the head was still unsent) and answers its own way. */
  async function hooked(
    answer: (res: express.Response) => void,
  ): Promise<{ status: number; headers: Headers; text: string; calls: boolean[] }> {
    const calls: boolean[] = [];
    const s = await serve((app) => {
      enableHeadHooks(app);
      app.get('/h', (_req, res) => {
        onHead(res, (r) => {
          calls.push(r.headersSent);
          r.setHeader('X-Hooked', String(calls.length));
        });
        answer(res);
      });
    });
    try {
      const r = await fetch(`${s.url}/h`);
      const text = await r.text();
      return { status: r.status, headers: r.headers, text, calls };
    } finally {
      await s.close();
    }
  }

  const answers: Array<[string, (res: express.Response) => void, number, string]> = [
    ['res.json', (res) => res.status(201).json({ a: 1 }), 201, '{"a":1}'],
    ['res.end without an explicit head', (res) => res.end('plain'), 200, 'plain'],
    [
      'res.flushHeaders (SSE)',
      (res) => {
        res.setHeader('Content-Type', 'text/event-stream');
        res.flushHeaders();
        res.write('data: 1\n\n');
        res.end('data: [DONE]\n\n');
      },
      200,
      'data: 1\n\ndata: [DONE]\n\n',
    ],
    [
      'res.writeHead(status, headers array)',
      (res) => {
        res.writeHead(202, ['Content-Type', 'text/plain', 'X-Own', 'yes']);
        res.write('a');
        res.end('b');
      },
      202,
      'ab',
    ],
    [
      'res.writeHead then res.end',
      (res) => {
        res.writeHead(204);
        res.end();
      },
      204,
      '',
    ],
  ];

  for (const [name, answer, status, text] of answers) {
    it(`runs the hook once, before the head, and sends its header: ${name}`, async () => {
      const r = await hooked(answer);
      expect({ status: r.status, text: r.text }).toEqual({ status, text });
      expect(r.calls).toEqual([false]);
      expect(r.headers.get('x-hooked')).toBe('1');
      if (name.includes('array')) expect(r.headers.get('x-own')).toBe('yes');
    });
  }

  it('runs every hook of a response in order; responses without hooks are untouched', async () => {
    const order: string[] = [];
    const s = await serve((app) => {
      enableHeadHooks(app);
      enableHeadHooks(app); // a second call does not wrap twice
      app.get('/two', (_req, res) => {
        onHead(res, () => order.push('first'));
        onHead(res, (r) => {
          order.push('second');
          r.setHeader('X-Second', 'y');
        });
        res.json({});
      });
      app.get('/none', (_req, res) => res.json({ none: true }));
    });
    try {
      const two = await fetch(`${s.url}/two`);
      await two.text();
      expect(order).toEqual(['first', 'second']);
      expect(two.headers.get('x-second')).toBe('y');
      const none = await fetch(`${s.url}/none`);
      expect(await none.json()).toEqual({ none: true });
      expect(order).toEqual(['first', 'second']);
    } finally {
      await s.close();
    }
  });
});

describe('headHeaders', () => {
  const answers: Array<[string, (res: express.Response) => void, Record<string, string>]> = [
    [
      'res.json (Express sets its own headers first)',
      (res) => res.status(201).json({ a: 1 }),
      { 'content-type': 'application/json; charset=utf-8' },
    ],
    ['res.end without an explicit head', (res) => res.end('plain'), {}],
    [
      'res.flushHeaders (SSE)',
      (res) => {
        res.setHeader('Content-Type', 'text/event-stream');
        res.flushHeaders();
        res.end('data: [DONE]\n\n');
      },
      { 'content-type': 'text/event-stream' },
    ],
    [
      'writeHead(status, flat array)',
      (res) => res.writeHead(202, ['X-Own', 'yes', 'X-Same', 'call']).end(),
      { 'x-own': 'yes', 'x-same': 'call' },
    ],
    [
      'writeHead(status, object)',
      (res) => res.writeHead(202, { 'X-Own': 'yes', 'x-same': 'call' }).end(),
      { 'x-own': 'yes', 'x-same': 'call' },
    ],
    [
      'writeHead(status, message, array of pairs)',
      (res) =>
        res
          .writeHead(202, 'Fine', [
            ['X-Own', 'yes'],
            ['X-Same', 'call'],
          ])
          .end(),
      { 'x-own': 'yes', 'x-same': 'call' },
    ],
    [
      'setHeader wins over a pending header',
      (res) => {
        res.setHeader('X-Same', 'set');
        res.end();
      },
      { 'x-same': 'set' },
    ],
  ];

  for (const [name, answer, expected] of answers) {
    it(`adds pending headers to the head, the answer's own winning: ${name}`, async () => {
      const s = await serve((app) => {
        enableHeadHooks(app);
        app.disable('x-powered-by');
        app.get('/h', (_req, res) => {
          headHeaders(res, ['X-Pending', 'p', 'X-Same', 'pending']);
          onHead(res, (r) => headHeaders(r, ['X-From-Hook', 'h']));
          expect(res.getHeader('X-Pending')).toBeUndefined();
          answer(res);
        });
      });
      try {
        const r = await fetch(`${s.url}/h`);
        await r.text();
        const got = Object.fromEntries(
          [...r.headers.entries()].filter(([k]) => k.startsWith('x-') || k === 'content-type'),
        );
        expect(got).toEqual({ 'x-pending': 'p', 'x-from-hook': 'h', 'x-same': 'pending', ...expected });
        // One value per header: a pending header never doubles one the answer wrote.
        expect(r.headers.get('x-same')).not.toContain(',');
      } finally {
        await s.close();
      }
    });
  }
});

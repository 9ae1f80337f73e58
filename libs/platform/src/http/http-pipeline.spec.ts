import type { IncomingMessage, ServerResponse } from 'http';
import type { Request } from 'express';
import { HttpPipeline, Middleware } from './http-pipeline';
import type { ExpressRoute } from './route-table';

const request = () => ({}) as IncomingMessage;
const response = () => ({ writeHead: jest.fn().mockReturnThis(), end: jest.fn() }) as unknown as ServerResponse;

describe('HttpPipeline', () => {
  it('runs the edge stages in order, then Express', () => {
    const seen: string[] = [];
    const stage =
      (name: string): Middleware =>
      (_req, _res, next) => (seen.push(name), next());
    const pipeline = new HttpPipeline();
    pipeline.wire({
      express: () => seen.push('express'),
      edge: [stage('id'), stage('log'), stage('auth')],
      errorResponder: () => seen.push('error'),
    });
    pipeline.handle(request(), response());
    expect(seen).toEqual(['id', 'log', 'auth', 'express']);
  });

  it("answers a stage's error with the app's error responder; later stages and Express never run", () => {
    const seen: string[] = [];
    const refused = new Error('refused');
    const pipeline = new HttpPipeline();
    pipeline.wire({
      express: () => seen.push('express'),
      edge: [(_req, _res, next) => next(refused), () => seen.push('later')],
      errorResponder: (e, req, res) =>
        seen.push(`error ${(e as Error).message}, paired ${req.res === res && res.req === req}`),
    });
    pipeline.handle(request(), response());
    expect(seen).toEqual(['error refused, paired true']);
  });

  /** A route as Express holds it, whose handler passes the request on with `passOn`. */
  const routeThat = (seen: string[], passOn?: unknown): ExpressRoute => ({
    path: '/v1/x',
    methods: { post: true },
    dispatch: (req, _res, done) => {
      const r = req as Request;
      seen.push(`route ${r.baseUrl === '' && r.originalUrl === '/v1/x' && r.next === done && r.params !== undefined}`);
      if (passOn !== 'nothing') done(passOn);
    },
  });
  const wiredWith = (seen: string[], route: ExpressRoute, fallback?: Middleware) => {
    const pipeline = new HttpPipeline();
    pipeline.wire({
      express: () => seen.push('express'),
      edge: [(_req, _res, next) => (seen.push('edge'), next())],
      errorResponder: (e) =>
        seen.push(`error ${(e as { status?: number; message: string }).status ?? ''} ${(e as Error).message}`),
      route: () => route,
      fallback: () => fallback,
    });
    return pipeline;
  };
  const post = () => ({ method: 'POST', url: '/v1/x' }) as IncomingMessage;

  it("hands a request to its route as Express's router does, never to Express", () => {
    const seen: string[] = [];
    wiredWith(seen, routeThat(seen, 'nothing')).handle(post(), response());
    expect(seen).toEqual(['edge', 'route true']);
  });

  it("answers a route's error with the app's error responder", () => {
    const seen: string[] = [];
    wiredWith(seen, routeThat(seen, new Error('broken'))).handle(post(), response());
    expect(seen).toEqual(['edge', 'route true', 'error  broken']);
  });

  it("sends a request its route passes on to the fallback (Nest's not-found handler), else answers 404", () => {
    for (const passOn of [undefined, 'route', 'router']) {
      const seen: string[] = [];
      const fallback: Middleware = (_req, _res, next) => (seen.push('fallback'), next(new Error('not found')));
      wiredWith(seen, routeThat(seen, passOn), fallback).handle(post(), response());
      expect({ passOn, seen }).toEqual({ passOn, seen: ['edge', 'route true', 'fallback', 'error  not found'] });
      const without: string[] = [];
      wiredWith(without, routeThat(without, passOn)).handle(post(), response());
      expect({ passOn, without }).toEqual({ passOn, without: ['edge', 'route true', 'error 404 Cannot POST /v1/x'] });
    }
  });

  it('answers 503 before it is wired (the app is still starting)', () => {
    const res = response();
    new HttpPipeline().handle(request(), res);
    expect(res.writeHead).toHaveBeenCalledWith(503);
  });
});

import type { IncomingMessage, ServerResponse } from 'http';
import { HttpPipeline, Middleware } from './http-pipeline';

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

  it('answers 503 before it is wired (the app is still starting)', () => {
    const res = response();
    new HttpPipeline().handle(request(), res);
    expect(res.writeHead).toHaveBeenCalledWith(503);
  });
});

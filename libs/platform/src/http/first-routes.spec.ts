import express from 'express';
import { ExpressLayer, firstRoutes } from './route-table';

const stackOf = (app: express.Express) => (app.router as unknown as { stack: ExpressLayer[] }).stack;
const noop = (_req: unknown, _res: unknown, next: () => void) => next();

describe('firstRoutes', () => {
  it('keeps each literal route that is the only layer matching its path for a method', () => {
    const app = express();
    app.get('/v1/chat/completions', noop); // another method on the same path: no obstacle to POST
    app.post('/v1/chat/completions', noop);
    app.get('/v1/models/:model', noop); // a parameter: left to the router
    app.get('/v1/models', noop);
    app.put('/v1/models', noop);
    const first = firstRoutes(stackOf(app));
    expect([...first.keys()].sort()).toEqual([
      'GET /v1/chat/completions',
      'GET /v1/models',
      'POST /v1/chat/completions',
      'PUT /v1/models',
    ]);
    expect(first.get('POST /v1/chat/completions')).toBe(stackOf(app)[1].route);
  });

  it('leaves a route to the router when middleware or another route of its method matches its path, before or after it', () => {
    const app = express();
    app.use('/portal', noop);
    app.post('/portal/events', noop);
    app.get('/files/*path', noop);
    app.get('/files/readme', noop);
    app.all('/any', noop);
    app.post('/any', noop);
    // What Nest makes of a MiddlewareConsumer's middleware: a route of its own, before the controller's.
    app.get('/hello/world', noop);
    app.get('/hello/world', noop);
    app.post('/open', noop);
    app.post('/late', noop);
    app.use('/late', noop);
    expect([...firstRoutes(stackOf(app)).keys()].filter((k) => !k.endsWith(' /any'))).toEqual(['POST /open']);
    expect(firstRoutes(stackOf(app)).has('POST /any')).toBe(false);
  });

  it("does not count error-handling middleware or the fallback every unanswered path reaches (Nest's not-found handler)", () => {
    const app = express();
    const notFound = (_req: unknown, _res: unknown, _next: unknown) => undefined;
    app.post('/open', noop);
    app.use(notFound);
    app.use((_err: unknown, _req: unknown, _res: unknown, next: () => void) => next());
    expect([...firstRoutes(stackOf(app), notFound).keys()]).toEqual(['POST /open']);
    // Any other middleware for every path keeps every route with the router.
    expect([...firstRoutes(stackOf(app)).keys()]).toEqual([]);
  });

  it('leaves HEAD and OPTIONS (answered by GET routes and by Express itself) to the router', () => {
    const app = express();
    app.head('/h', noop);
    app.options('/o', noop);
    app.get('/g', noop);
    expect([...firstRoutes(stackOf(app)).keys()]).toEqual(['GET /g']);
  });
});

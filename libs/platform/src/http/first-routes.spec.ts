import express from 'express';
import { ExpressLayer, firstRoutes } from './route-table';

const stackOf = (app: express.Express) => (app.router as unknown as { stack: ExpressLayer[] }).stack;
const noop = (_req: unknown, _res: unknown, next: () => void) => next();

describe('firstRoutes', () => {
  it("keeps each literal route Express's router reaches for a method without another layer matching first", () => {
    const app = express();
    app.get('/v1/chat/completions', noop); // another method on the same path: no obstacle to POST
    app.post('/v1/chat/completions', noop);
    app.post('/v1/chat/completions', noop); // a second registration is never reached first
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
    const routes = stackOf(app).map((l) => l.route);
    expect(first.get('POST /v1/chat/completions')).toBe(routes[1]);
  });

  it('leaves a route to the router when middleware or an earlier route of its method matches its path', () => {
    const app = express();
    app.use('/portal', noop);
    app.post('/portal/events', noop);
    app.get('/files/*path', noop);
    app.get('/files/readme', noop);
    app.all('/any', noop);
    app.post('/any', noop);
    app.post('/open', noop);
    const first = firstRoutes(stackOf(app));
    expect([...first.keys()].filter((k) => !k.endsWith(' /any'))).toEqual(['POST /open']);
    // The route for any method is the one reached first for POST too, never the later POST route.
    expect(first.get('POST /any')).toBe(stackOf(app)[4].route);
  });

  it('leaves HEAD and OPTIONS (answered by GET routes and by Express itself) to the router', () => {
    const app = express();
    app.head('/h', noop);
    app.options('/o', noop);
    app.get('/g', noop);
    expect([...firstRoutes(stackOf(app)).keys()]).toEqual(['GET /g']);
  });
});

import { once } from 'events';
import { createServer, request } from 'http';
import { AddressInfo } from 'net';
import { GatewayError } from '../errors';
import {
  EngineAbortedError,
  EngineBusyError,
  EngineFailedError,
  EngineInputError,
  EngineUnavailableError,
} from '@app/engines';
import { requestSignal, toMediaError } from './media-errors';

describe('toMediaError', () => {
  const statusOf = (e: unknown) => (toMediaError(e, 'image') as GatewayError).getStatus();

  it('maps engine errors to 4xx/503, never 500', () => {
    expect(statusOf(new EngineInputError('unsupported image format'))).toBe(415);
    expect(statusOf(new EngineInputError('image too large'))).toBe(400);
    expect(statusOf(new EngineUnavailableError('ocr', 'model missing'))).toBe(503);
    const failed = toMediaError(new EngineFailedError('ocr', 'out of memory'), 'image') as GatewayError;
    expect(failed.getStatus()).toBe(503);
    expect(failed.getResponse()).toMatchObject({ errorCode: 'engine_failed', retryAfterSeconds: 2 });
  });

  it('answers a key over its engine share 429, a full server 503, both engine_busy with a retry hint', () => {
    const key = toMediaError(new EngineBusyError('key', '2 running'), 'file') as GatewayError;
    expect(key.getStatus()).toBe(429);
    expect(key.getResponse()).toMatchObject({
      type: 'rate_limit_error',
      errorCode: 'engine_busy',
      retryAfterSeconds: 1,
    });
    const server = toMediaError(new EngineBusyError('server', 'full'), 'file') as GatewayError;
    expect(server.getStatus()).toBe(503);
    expect(server.getResponse()).toMatchObject({ type: 'service_unavailable', errorCode: 'engine_busy' });
    expect(statusOf(new EngineAbortedError())).toBe(400);
  });
});

describe('requestSignal', () => {
  it('aborts when the client goes away before the answer, not after a finished answer', async () => {
    const signals: AbortSignal[] = [];
    const closed: Array<Promise<unknown>> = [];
    const server = createServer((req, res) => {
      signals.push(requestSignal({ res })!);
      closed.push(once(res, 'close'));
      if (req.url === '/done') res.end('ok');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    try {
      // Finished normally: never aborted.
      await new Promise<void>((resolve, reject) =>
        request({ port, path: '/done' }, (r) => r.resume().on('end', resolve))
          .on('error', reject)
          .end(),
      );
      await closed[0];
      expect(signals[0].aborted).toBe(false);
      // The client hangs up while the server is still working.
      const client = request({ port, path: '/slow' });
      client.on('error', () => undefined);
      client.end();
      while (signals.length < 2) await once(server, 'request');
      const aborted = once(signals[1], 'abort');
      client.destroy();
      await aborted;
      expect(signals[1].aborted).toBe(true);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

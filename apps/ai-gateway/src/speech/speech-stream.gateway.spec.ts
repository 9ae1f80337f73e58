import { EventEmitter, once } from 'events';
import { engineProcesses, PocketsphinxEngine } from '@app/engines';
import { FakeEngineBinary, pidAlive, startFakeEngineBinary } from '@app/engines/testing/fake-engine-binary';
import { GatewayConfig } from '../config/gateway.config';
import { ThrottlerException } from '@nestjs/throttler';
import { GatewayError, GatewayErrorCode } from '../errors';
import { SpeechStreamGateway, STREAM_CLOSE, streamError } from './speech-stream.gateway';
import { TranscriptionEngines } from './transcription-engines';

/** The server side of one WebSocket, as the gateway sees it. */
class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readonly CONNECTING = 0;
  readyState = 1;
  readonly messages: any[] = [];
  closedWith?: { code: number; reason: string };
  send(text: string) {
    this.messages.push(JSON.parse(text));
    this.emit('sent', this.messages[this.messages.length - 1]);
  }
  close(code: number, reason: string) {
    if (this.readyState !== 1) return;
    this.readyState = 3;
    this.closedWith = { code, reason };
    this.emit('close', code, reason);
  }
  /** The client goes away without a goodbye. */
  drop() {
    this.readyState = 3;
    this.emit('close', 1006, '');
  }
  pause() {}
  resume() {}
  async next(type: string): Promise<any> {
    for (;;) {
      const found = this.messages.find((m) => m.type === type);
      if (found) return found;
      await once(this, 'sent');
    }
  }
}

/** One second of a loud 200 Hz square wave: speech as far as the segmenter can tell. */
function loudSecond(): Buffer {
  const pcm = new Int16Array(16_000);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.floor(i / 40) % 2 ? 12_000 : -12_000;
  return Buffer.from(pcm.buffer);
}

describe('SpeechStreamGateway engine limits (M4)', () => {
  let fake: FakeEngineBinary;
  let gateway: SpeechStreamGateway;

  beforeAll(async () => {
    fake = await startFakeEngineBinary();
    const config = Object.assign(new GatewayConfig(), {
      AI_LOCAL_STT: true,
      AI_ENGINE_MAX_CONCURRENT: 8,
      AI_ENGINE_MAX_CONCURRENT_PER_KEY: 2,
      AI_ENGINE_MAX_QUEUED: 8,
      AI_ENGINE_MAX_QUEUED_PER_KEY: 0,
    });
    // The module's own provider applies AI_ENGINE_* to the shared limiter.
    let limits: unknown;
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded after the module mocks above are in place
      limits = new (require('../vision/engine-limits').EngineLimits)(config);
    } catch {
      limits = undefined; // (before the fix there was no limiter to configure)
    }
    const engines = new TranscriptionEngines(config, limits as any);
    // The real PocketSphinx engine code, with a stand-in program: no Debian package needed.
    (engines as any).local = new PocketsphinxEngine({ binary: fake.binary, modelDir: fake.modelDir });
    const authenticator = {
      principalForKey: async (k: string) => ({ id: `id-${k}`, kind: 'api-key', roles: [], claims: { scopes: null } }),
    };
    const metering = {
      remaining: async () => ({ yuan: null, exhausted: false }),
      reserve: async () => ({}),
      settle: async () => undefined,
    };
    gateway = new SpeechStreamGateway(config, authenticator as any, metering as any, engines);
  });
  afterAll(async () => {
    await fake.close();
  });

  /** Resolves once the engine's child with this pid has been reaped (engineProcesses emits 'exit' on close). */
  async function reaped(pid: number): Promise<void> {
    while (engineProcesses.live.some((p) => p.pid === pid)) await once(engineProcesses, 'exit');
  }

  async function session(key: string): Promise<FakeSocket> {
    const ws = new FakeSocket();
    gateway.handleConnection(ws as any, { headers: {} } as any);
    ws.emit('message', Buffer.from(JSON.stringify({ type: 'config', language: 'en', api_key: key })), false);
    await ws.next('ready');
    ws.emit('message', loudSecond(), true);
    ws.emit('message', Buffer.from('{"type":"end"}'), false);
    return ws;
  }

  it('five sessions of one key run two engine processes, refuse three (4029 engine_busy), and a client that leaves gets its process killed', async () => {
    const sockets = await Promise.all(Array.from({ length: 5 }, () => session('same-key')));
    const refused = () => sockets.filter((s) => s.closedWith?.code === STREAM_CLOSE.quota);
    // Wait until every session has either started an engine process or been refused.
    while (fake.started + refused().length < 5)
      await Promise.race([once(fake.events, 'start'), ...sockets.map((s) => once(s, 'close'))]);
    expect(fake.started).toBe(2);
    expect(fake.running).toHaveLength(2);
    expect(refused()).toHaveLength(3);
    for (const s of refused())
      expect(s.messages).toContainEqual(
        expect.objectContaining({ type: 'error', code: 'engine_busy', message: expect.stringMatching(/API key/) }),
      );

    // One transcribing client disconnects: exactly one process dies, and its pid is gone.
    const [a, b] = sockets.filter((s) => !s.closedWith);
    const pids = [...fake.running];
    const exited = once(fake.events, 'exit');
    a.drop();
    const [pid] = (await exited) as [number];
    expect(pids).toContain(pid);
    // The fake's socket can close before the kernel has finished the process: wait until its parent
    // (the engine's spawn) has reaped it, an event, then check the pid is gone.
    await reaped(pid);
    expect(pidAlive(pid)).toBe(false);
    expect(fake.running).toEqual(pids.filter((p) => p !== pid));

    // The other one too.
    const last = fake.running[0];
    b.drop();
    await fake.waitForExit(last);
    await reaped(last);
    expect(pidAlive(last)).toBe(false);
    expect(fake.running).toEqual([]);
    expect(fake.started).toBe(2);
  });

  it('refuses a key over its share while another key still gets served', async () => {
    const busy = await Promise.all([session('k1'), session('k1')]);
    await fake.waitForStarts(4);
    const other = await session('k2');
    await fake.waitForStarts(5);
    expect(fake.running).toHaveLength(3);
    expect(other.closedWith).toBeUndefined();
    for (const s of [...busy, other]) s.drop();
    while (fake.running.length) await once(fake.events, 'exit');
  });
});

describe('SpeechStreamGateway billing before the goodbye', () => {
  /** A session whose settlement waits until the test lets it finish; records what happened in order. */
  function billedSession() {
    const events: string[] = [];
    let release!: () => void;
    const settled = new Promise<void>((r) => (release = r));
    const metering = {
      remaining: async () => ({ yuan: null, exhausted: false }),
      reserve: async () => ({ keyId: 'k', admitted: null, settled: false, startedAt: 0 }),
      settle: async () => {
        events.push('settle started');
        await settled;
        events.push('settled');
      },
    };
    const engines = { check: () => ({ needsPcm: true }), transcribePcm: async () => ({ text: '' }) };
    const authenticator = {
      principalForKey: async (k: string) => ({ id: `id-${k}`, kind: 'api-key', roles: [], claims: { scopes: null } }),
    };
    const gateway = new SpeechStreamGateway(new GatewayConfig(), authenticator as any, metering as any, engines as any);
    const ws = new FakeSocket();
    ws.on('sent', (m) => events.push(`sent ${m.type}`));
    ws.on('close', (code) => events.push(`closed ${code}`));
    gateway.handleConnection(ws as any, { headers: {} } as any);
    const settleStarted = () =>
      new Promise<void>((resolve) => {
        const check = () => (events.includes('settle started') ? resolve() : setImmediate(check));
        check();
      });
    return { ws, events, release, settleStarted };
  }

  it('settles before it answers {"type":"end"} and closes 1000', async () => {
    const s = billedSession();
    s.ws.emit('message', Buffer.from(JSON.stringify({ type: 'config', api_key: 'sk-x' })), false);
    await s.ws.next('ready');
    s.ws.emit('message', Buffer.from(JSON.stringify({ type: 'end' })), false);
    await s.settleStarted();
    // Held in the settlement: neither the goodbye nor the close has gone out.
    expect(s.events).toEqual(['sent ready', 'settle started']);
    s.release();
    await s.ws.next('end');
    await (s.ws.closedWith ? undefined : once(s.ws, 'close'));
    expect(s.events).toEqual(['sent ready', 'settle started', 'settled', 'sent end', 'closed 1000']);
  });

  it('settles before it closes a session on an error', async () => {
    const s = billedSession();
    s.ws.emit('message', Buffer.from(JSON.stringify({ type: 'config', api_key: 'sk-x' })), false);
    await s.ws.next('ready');
    s.ws.emit('message', Buffer.from('hello?'), false); // text where audio is expected: 4004
    await s.settleStarted();
    expect(s.events).toEqual(['sent ready', 'sent error', 'settle started']);
    expect(s.ws.closedWith).toBeUndefined();
    s.release();
    await once(s.ws, 'close');
    expect(s.events).toEqual([
      'sent ready',
      'sent error',
      'settle started',
      'settled',
      `closed ${STREAM_CLOSE.audioExpected}`,
    ]);
  });
});

describe('streamError', () => {
  it('maps catalog errors to the event code and close code, others to internal', () => {
    expect(streamError(new GatewayError(GatewayErrorCode.StreamConfigTimeout, { ms: 5 }))).toEqual({
      close: STREAM_CLOSE.unauthorized,
      code: 'config_timeout',
      message: 'send {"type":"config","api_key":...} within 5 ms',
    });
    expect(streamError(new GatewayError(GatewayErrorCode.StreamInvalidConfig, { message: 'bad' }))).toMatchObject({
      close: STREAM_CLOSE.badConfig,
      code: 'invalid_config',
      message: 'bad',
    });
    expect(streamError(new GatewayError(GatewayErrorCode.ApiKeyRevoked))).toMatchObject({
      close: STREAM_CLOSE.unauthorized,
      code: 'invalid_api_key',
    });
    expect(streamError(new GatewayError(GatewayErrorCode.ScopeNotAllowed, { scope: 'speech' }))).toMatchObject({
      close: STREAM_CLOSE.forbidden,
      code: 'scope_not_allowed',
    });
    expect(streamError(new GatewayError(GatewayErrorCode.InsufficientQuota))).toMatchObject({
      close: STREAM_CLOSE.quota,
      code: 'insufficient_quota',
    });
    expect(streamError(new GatewayError(GatewayErrorCode.EngineBusy, { detail: 'full' }))).toMatchObject({
      close: STREAM_CLOSE.unavailable,
      code: 'engine_busy',
    });
    expect(streamError(new GatewayError(GatewayErrorCode.ServerShutdown))).toMatchObject({
      close: 1001,
      code: 'server_shutdown',
    });
    expect(streamError(new ThrottlerException('Too many requests, retry later'))).toEqual({
      close: STREAM_CLOSE.quota,
      code: 'rate_limit_exceeded',
      message: 'Too many requests, retry later',
    });
    // A statement cut by statement_timeout, as HTTP answers it: 503 database_timeout, closed 4503.
    const cut = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    expect(streamError(cut)).toMatchObject({ close: STREAM_CLOSE.unavailable, code: 'database_timeout' });
    expect(streamError(new Error('db down'))).toEqual({
      close: STREAM_CLOSE.internal,
      code: 'internal_error',
      message: 'internal error',
      unexpected: true,
    });
  });
});

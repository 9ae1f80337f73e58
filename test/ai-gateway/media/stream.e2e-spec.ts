import { decodeAudio, PocketsphinxEngine, SpeechSynthesisEngine } from '@app/engines';
import { GatewayFixture, startGatewayFixture } from '../gateway-fixture';
import { ledgerRows } from './ledger';
import { MediaUpstream, startMediaUpstream } from './media-upstream';
import { openStream, streamRealTime } from './stream-client';

const RATE = 16_000;

async function speech(text: string): Promise<Int16Array> {
  const wav = (
    await SpeechSynthesisEngine.shared().synthesize(text, { voice: 'en-US-GuyNeural', format: 'wav', speed: 0.8 })
  ).audio;
  return (await decodeAudio(wav, { sampleRate: RATE })).pcm;
}

function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

describe('WebSocket /v1/speech/stream', () => {
  let f: GatewayFixture;
  let media: MediaUpstream;
  let key: string;
  let audio: Int16Array;
  let firstEnd: number;

  beforeAll(async () => {
    media = await startMediaUpstream();
    f = await startGatewayFixture({
      AI_TRANSCRIBE_BASE_URL: media.url,
      AI_TRANSCRIBE_API_KEY: 'sk-media-upstream',
      AI_STREAM_CONFIG_TIMEOUT_MS: '500',
      AI_STREAM_IDLE_TIMEOUT_MS: '1000',
      AI_STREAM_MAX_MESSAGE_BYTES: '65536',
    });
    key = (await f.createKey({ name: 'stream' })).key;
    const first = await speech('The weather is nice today.');
    firstEnd = first.length / RATE;
    audio = concat(
      new Int16Array(RATE * 0.3),
      first,
      new Int16Array(RATE * 1.5),
      await speech('Please call me tomorrow.'),
      new Int16Array(RATE * 0.3),
    );
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
    await SpeechSynthesisEngine.shared().close();
  });

  it('transcribes audio streamed in real time: finals as each utterance ends, then end, billed per minute', async () => {
    const run = await openStream(f.gw.url);
    run.ws.send(JSON.stringify({ type: 'config', language: 'en', api_key: key }));
    const ready = await run.next('ready');
    expect(ready).toMatchObject({ sample_rate: 16000 });
    // The first utterance is answered while audio is still flowing: after its trailing pause, silence
    // keeps flowing in real time until its final arrives (an event, not a deadline), then the rest.
    const head = audio.subarray(0, Math.round((0.3 + firstEnd + 1.5) * RATE));
    await streamRealTime(run.ws, head, RATE);
    let extraSilence = 0;
    while (!run.messages.some((m) => m.type === 'final')) {
      if (extraSilence >= RATE * 30)
        throw new Error(
          `no final for the first utterance while 30 more seconds of audio flowed: ${JSON.stringify(run.messages)}`,
        );
      await streamRealTime(run.ws, new Int16Array(RATE / 10), RATE);
      extraSilence += RATE / 10;
    }
    const firstFinal = run.messages.find((m) => m.type === 'final')!;
    await streamRealTime(run.ws, audio.subarray(head.length), RATE);
    const sentSeconds = (audio.length + extraSilence) / RATE;
    expect(firstFinal.text).toMatch(/^heard 1 utterance\(s\) in [\d.]+ seconds of wav$/);
    expect(firstFinal.start).toBeLessThan(0.4);
    expect(Math.abs(firstFinal.end - (0.3 + firstEnd))).toBeLessThan(0.3);

    run.ws.send(JSON.stringify({ type: 'end' }));
    const end = await run.next('end');
    expect(end.duration).toBeCloseTo(sentSeconds, 2);
    expect(await run.closed).toEqual({ code: 1000, reason: 'end' });
    const finals = run.messages.filter((m) => m.type === 'final');
    expect(finals).toHaveLength(2);
    expect(finals[1].start).toBeGreaterThan(finals[0].end + 1);
    console.log(
      `stream: ${sentSeconds.toFixed(2)} s sent in real time (${extraSilence / RATE} s of it extra silence waiting for the first final); first final ${firstFinal.at - ready.at} ms after ready; messages: ${run.messages.map((m) => m.type).join(',')}`,
    );
    // Each utterance went upstream as its own WAV.
    expect(media.calls.filter((c) => c.path === '/v1/audio/transcriptions').length).toBeGreaterThanOrEqual(2);
    const [row] = await ledgerRows(f.gw.dbUrl, '/v1/speech/stream');
    expect(Number(row.seconds)).toBeCloseTo(sentSeconds, 2);
    expect(Number(row.cost_yuan)).toBeCloseTo((Math.ceil(sentSeconds) / 60) * 0.03, 10);
  });

  it('keeps every utterance, in order, when audio arrives faster than a slow upstream transcribes (socket paused, then resumed)', async () => {
    media.delayMs = 150;
    try {
      const beep = Int16Array.from({ length: RATE * 0.4 }, (_, i) =>
        Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / RATE)),
      );
      const pause = new Int16Array(RATE * 0.7);
      const parts: Int16Array[] = [];
      for (let i = 0; i < 16; i++) parts.push(beep, pause);
      const burst = concat(...parts);
      const run = await openStream(f.gw.url);
      run.ws.send(JSON.stringify({ type: 'config', api_key: key }));
      await run.next('ready');
      // All at once: 16 utterances queue up behind a 150 ms upstream.
      for (let i = 0; i < burst.length; i += 1600)
        run.ws.send(Buffer.from(burst.buffer, burst.byteOffset + i * 2, Math.min(1600, burst.length - i) * 2));
      run.ws.send(JSON.stringify({ type: 'end' }));
      const end = await run.next('end');
      expect(end.duration).toBeCloseTo(burst.length / RATE, 2);
      const finals = run.messages.filter((m) => m.type === 'final');
      expect(finals).toHaveLength(16);
      finals.forEach((m, i) => expect(Math.abs(m.start - i * 1.1)).toBeLessThan(0.25));
      expect((await run.closed).code).toBe(1000);
    } finally {
      media.delayMs = 0;
    }
  });

  it('answers a plain HTTP GET with 426 and documents the protocol in Swagger', async () => {
    const res = await fetch(`${f.gw.url}/v1/speech/stream`);
    expect(res.status).toBe(426);
    const doc = await (await fetch(`${f.gw.url}/v3/api-docs`)).json();
    for (const path of [
      '/v1/vision/recognize',
      '/v1/vision/generate',
      '/v1/images/generations',
      '/v1/speech/transcribe',
      '/v1/audio/transcriptions',
      '/v1/speech/synthesize',
      '/v1/audio/speech',
      '/v1/speech/stream',
    ]) {
      expect([path, Boolean(doc.paths[path])]).toEqual([path, true]);
    }
    expect(doc.components.schemas.StreamConfigMessage.properties.api_key).toBeDefined();
    expect(doc.components.schemas.RecognizeImageResponse.properties.faces).toBeDefined();
  });

  it('accepts another sample rate and audio sent before ready; the session is billed before its end message', async () => {
    const budgeted = await f.createKey({ name: 'rate', budget_yuan: 1 });
    const run = await openStream(f.gw.url);
    run.ws.send(JSON.stringify({ type: 'config', api_key: budgeted.key, sample_rate: 8000 }));
    const pcm8k = new Int16Array(8000 * 2).map(
      (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * 200 * i) / 8000)) * (i < 8000 ? 1 : 0),
    );
    run.ws.send(Buffer.from(pcm8k.buffer));
    run.ws.send(JSON.stringify({ type: 'end' }));
    const end = await run.next('end');
    expect(end.duration).toBeCloseTo(2, 2);
    expect(run.messages.filter((m) => m.type === 'final')).toHaveLength(1);
    // Read as soon as `end` arrived (the close not awaited): the session's hold is already replaced by its charge.
    const k = (await f.admin('GET', `/admin/keys/${budgeted.id}`)).body;
    expect({ reserved: k.reserved_yuan, spent: k.spent_yuan }).toEqual({ reserved: 0, spent: 0.001 });
    expect((await run.closed).code).toBe(1000);
  });

  const expectClose = async (
    send: (ws: import('ws').WebSocket) => void | Promise<void>,
    code: number,
    errorCode: string,
  ) => {
    const run = await openStream(f.gw.url);
    await send(run.ws);
    const closed = await run.closed;
    expect({ code: closed.code, error: run.messages.find((m) => m.type === 'error')?.code }).toEqual({
      code,
      error: errorCode,
    });
  };

  it('closes 4001 when no config arrives in time or the key is wrong', async () => {
    await expectClose(() => undefined, 4001, 'config_timeout');
    await expectClose(
      (ws) => ws.send(JSON.stringify({ type: 'config', api_key: 'sk-wrong' })),
      4001,
      'invalid_api_key',
    );
    await expectClose((ws) => ws.send(JSON.stringify({ type: 'config' })), 4001, 'invalid_api_key');
  });

  it("refuses a stranger's frame past twice AI_STREAM_MAX_MESSAGE_BYTES from its header (1009), before a key is checked or the frame buffered", async () => {
    const run = await openStream(f.gw.url);
    run.ws.send(Buffer.alloc(200_000)); // the fixture's limit is 65 536: the frame bound is 131 072
    expect((await run.closed).code).toBe(1009);
    expect(run.messages).toEqual([]);
  });

  it('closes 4002 for a bad config', async () => {
    await expectClose((ws) => ws.send('not json'), 4002, 'invalid_config');
    await expectClose((ws) => ws.send(Buffer.alloc(320)), 4002, 'config_expected');
    await expectClose(
      (ws) => ws.send(JSON.stringify({ type: 'config', api_key: key, sample_rate: 100 })),
      4002,
      'invalid_config',
    );
  });

  it('closes 4004 for a text frame where audio is expected, 4009 for an oversized message, 4008 when idle', async () => {
    const configured = async (ws: import('ws').WebSocket) => {
      ws.send(JSON.stringify({ type: 'config', api_key: key }));
      await new Promise((r) => ws.once('message', r));
    };
    await expectClose(
      async (ws) => {
        await configured(ws);
        ws.send('hello?');
      },
      4004,
      'audio_expected',
    );
    await expectClose(
      async (ws) => {
        await configured(ws);
        ws.send(Buffer.alloc(70_000));
      },
      4009,
      'message_too_large',
    );
    const started = Date.now();
    await expectClose(configured, 4008, 'idle_timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('closes 4003 for a key without the speech scope and 4029 when the budget cannot pay', async () => {
    const visionOnly = (await f.createKey({ name: 'v', scopes: ['vision'] })).key;
    await expectClose(
      (ws) => ws.send(JSON.stringify({ type: 'config', api_key: visionOnly })),
      4003,
      'scope_not_allowed',
    );
    const broke = (await f.createKey({ name: 'b', budget_yuan: 0.0001 })).key;
    await expectClose((ws) => ws.send(JSON.stringify({ type: 'config', api_key: broke })), 4029, 'insufficient_quota');
  });

  it('stops a session at what the budget pays for (4010) and bills what was received', async () => {
    const small = await f.createKey({ name: 's', budget_yuan: 0.001 }); // 2 seconds of live audio
    const run = await openStream(f.gw.url);
    run.ws.send(JSON.stringify({ type: 'config', api_key: small.key }));
    expect((await run.next('ready')).max_seconds).toBe(2);
    for (let i = 0; i < 30 && run.ws.readyState === run.ws.OPEN; i++) run.ws.send(Buffer.alloc(3200)); // 0.1 s each
    expect((await run.closed).code).toBe(4010);
    expect(run.messages.find((m) => m.type === 'error')?.code).toBe('session_limit');
    // Billed before the close: nothing of the session's hold is left once the client saw it.
    const k = (await f.admin('GET', `/admin/keys/${small.id}`)).body;
    expect({ reserved: k.reserved_yuan, spent: k.spent_yuan }).toEqual({ reserved: 0, spent: 0.001 });
    const rows = await ledgerRows(f.gw.dbUrl, '/v1/speech/stream', 1, 5000, small.id);
    expect(rows).toHaveLength(1);
    expect({ seconds: Number(rows[0].seconds), cost: Number(rows[0].cost_yuan) }).toEqual({ seconds: 2, cost: 0.001 });
  });
});

describe('WebSocket /v1/speech/stream: a session that carries almost nothing', () => {
  let f: GatewayFixture;
  let media: MediaUpstream;
  beforeAll(async () => {
    media = await startMediaUpstream();
    f = await startGatewayFixture({
      AI_TRANSCRIBE_BASE_URL: media.url,
      AI_TRANSCRIBE_API_KEY: 'sk-media-upstream',
      AI_STREAM_IDLE_TIMEOUT_MS: '1000',
      AI_STREAM_MAX_SECONDS: '1',
    });
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
  });

  it('ends at twice AI_STREAM_MAX_SECONDS of wall-clock time though a sample within each idle timeout keeps it from idling', async () => {
    const key = (await f.createKey({ name: 'trickle' })).key;
    const run = await openStream(f.gw.url);
    run.ws.send(JSON.stringify({ type: 'config', api_key: key }));
    await run.next('ready');
    let closed = false;
    void run.closed.then(() => (closed = true));
    // One sample every 300 ms: never idle for AI_STREAM_IDLE_TIMEOUT_MS, and far from a second of audio.
    for (let i = 0; i < 100 && !closed; i++) {
      run.ws.send(Buffer.alloc(2));
      await new Promise((r) => setTimeout(r, 300));
    }
    expect((await run.closed).code).toBe(4010);
    const error = run.messages.find((m) => m.type === 'error');
    expect([error?.code, error?.message]).toEqual([
      'session_limit',
      'a session may last at most 2 seconds (twice AI_STREAM_MAX_SECONDS)',
    ]);
  });
});

// PocketSphinx is a Debian package, not an npm one: this runs where it is installed.
const local = PocketsphinxEngine.shared().available ? describe : describe.skip;
local('WebSocket /v1/speech/stream with the local PocketSphinx engine', () => {
  let f: GatewayFixture;
  afterAll(async () => {
    await f?.close();
    await SpeechSynthesisEngine.shared().close();
  });

  it('streams English speech and gets recognized words back', async () => {
    f = await startGatewayFixture({});
    const key = (await f.createKey({ name: 'local' })).key;
    const pcm = concat(await speech('I would like a cup of coffee'), new Int16Array(RATE));
    const run = await openStream(f.gw.url);
    run.ws.send(JSON.stringify({ type: 'config', language: 'en-US', api_key: key }));
    await run.next('ready');
    await streamRealTime(run.ws, pcm, RATE, 200);
    run.ws.send(JSON.stringify({ type: 'end' }));
    await run.next('end');
    const text = run.messages
      .filter((m) => m.type === 'final')
      .map((m) => m.text)
      .join(' ');
    console.log(`stream (pocketsphinx): "${text}"`);
    expect(text).toMatch(/^[a-z' ]+$/);
    expect(text.split(' ').length).toBeGreaterThanOrEqual(2);
  });
});

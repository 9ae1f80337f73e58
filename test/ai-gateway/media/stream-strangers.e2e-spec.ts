/**
 * /v1/speech/stream before a key is checked: a socket's config (its first message) is a stranger's body,
 * refused from its frame header past PUBLIC_BODY_LIMIT_BYTES, and a socket that ends without presenting a
 * key counts against its address under the same limit of refused credentials as HTTP (RATE_LIMIT_PER_MINUTE).
 * Each test speaks from its own address (X-Forwarded-For, believed from loopback by TRUST_PROXY's default).
 */
import { GatewayFixture, startGatewayFixture } from '../gateway-fixture';
import { MediaUpstream, startMediaUpstream } from './media-upstream';
import { openStream } from './stream-client';

describe('WebSocket /v1/speech/stream: strangers', () => {
  let f: GatewayFixture;
  let media: MediaUpstream;
  let key: string;

  beforeAll(async () => {
    media = await startMediaUpstream();
    f = await startGatewayFixture({
      AI_TRANSCRIBE_BASE_URL: media.url,
      AI_TRANSCRIBE_API_KEY: 'sk-media-upstream',
      RATE_LIMIT_PER_MINUTE: '3',
      PUBLIC_BODY_LIMIT_BYTES: '16384',
    });
    key = (await f.createKey({ name: 'stream' })).key;
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
  });

  const from = (ip: string) => ({ 'x-forwarded-for': ip });

  it('refuses a config message past PUBLIC_BODY_LIMIT_BYTES from its frame header (1009), unread; a valid config lifts the limit for audio', async () => {
    const big = await openStream(f.gw.url, from('198.51.100.1'));
    // A valid key, padded past 16 KiB: never parsed, so never checked.
    big.ws.send(JSON.stringify({ type: 'config', api_key: key, padding: 'x'.repeat(20_000) }));
    expect(await big.closed).toMatchObject({ code: 1009 });
    expect(big.messages).toEqual([]);

    const run = await openStream(f.gw.url, from('198.51.100.2'));
    run.ws.send(JSON.stringify({ type: 'config', api_key: key }));
    run.ws.send(Buffer.alloc(64_000)); // 2 s of silence in one frame, sent before ready
    run.ws.send(JSON.stringify({ type: 'end' }));
    expect((await run.next('end')).duration).toBe(2);
    expect((await run.closed).code).toBe(1000);
  });

  it('counts every socket that ends without presenting a key against its address; past RATE_LIMIT_PER_MINUTE the next upgrade is refused (4029) before it is read, and so is HTTP', async () => {
    const address = from('198.51.100.7');
    const refusals: Array<[string | Buffer, number, string]> = [
      ['not json', 4002, 'invalid_config'],
      [JSON.stringify({ type: 'config' }), 4001, 'invalid_api_key'],
      [Buffer.alloc(320), 4002, 'config_expected'],
      [JSON.stringify({ type: 'hello', api_key: key }), 4002, 'invalid_config'],
    ];
    for (const [message, code, error] of refusals) {
      const run = await openStream(f.gw.url, address);
      run.ws.send(message);
      const closed = await run.closed;
      expect([closed.code, run.messages.map((m) => m.code)]).toEqual([code, [error]]);
    }
    // Four strangers' sockets in the minute, one more than RATE_LIMIT_PER_MINUTE: the address is blocked.
    const blocked = await openStream(f.gw.url, address);
    expect((await blocked.closed).code).toBe(4029);
    expect(blocked.messages.map((m) => m.code)).toEqual(['rate_limit_exceeded']);
    const http = await fetch(`${f.gw.url}/v1/models`, { headers: { ...address, authorization: `Bearer ${key}` } });
    expect(http.status).toBe(429);

    // Another address is not blocked: its valid key streams.
    const other = await openStream(f.gw.url, from('198.51.100.8'));
    other.ws.send(JSON.stringify({ type: 'config', api_key: key }));
    expect((await other.next('ready')).sample_rate).toBe(16000);
    other.ws.send(JSON.stringify({ type: 'end' }));
    expect((await other.closed).code).toBe(1000);
  });
});

// The gateway's multipart uploads (/v1/images/edits, /v1/audio/transcriptions, ...) are admitted before multer
// reads their bodies: a key's share of uploads in progress per replica (AI_UPLOADS_PER_KEY), the replica's upload
// bytes (AI_UPLOAD_BYTES_IN_FLIGHT_MAX), and a receive-rate floor (408) judged on the app's clock.
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { request as httpRequest } from 'http';
import { UPLOAD_RATE_GRACE_MS, UploadSlots } from '@app/platform';
import { GatewayFixture } from '../gateway-fixture';
import { FakeClock } from '../../support/clock';
import { startMediaGateway } from './media-gateway';
import { MediaUpstream, startMediaUpstream } from './media-upstream';

/** What each trickled upload announces (under AI_MEDIA_MAX_EDIT_BYTES), of which only its head is ever sent. */
const DECLARED = 150_000;
const PER_KEY = 4;

describe('AI gateway: multipart uploads are admitted before their bodies are read', () => {
  // REQUEST_TIMEOUT_MS far away: only the admission and its receive-rate floor answer a trickle here.
  const clock = new FakeClock();
  let f: GatewayFixture;
  let media: MediaUpstream;
  let slots: UploadSlots;
  const open: Array<{ req: ReturnType<typeof httpRequest> }> = [];

  beforeAll(async () => {
    media = await startMediaUpstream();
    f = await startMediaGateway(
      media,
      {
        REQUEST_TIMEOUT_MS: '600000',
        AI_MEDIA_MAX_EDIT_BYTES: '600000',
        AI_UPLOADS_PER_KEY: String(PER_KEY),
        AI_UPLOAD_BYTES_IN_FLIGHT_MAX: '2000000',
      },
      undefined,
      { clock },
    );
    slots = f.gw.app.get(UploadSlots);
  });
  afterEach(async () => {
    open.splice(0).forEach((t) => t.req.destroy());
    while (slots.inFlight > 0) await new Promise((resolve) => setImmediate(resolve));
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
    delete process.env.FAKE_MEDIA_KEY;
  });

  /** Until the replica holds `n` uploads (a turn of the event loop at a time; jest's timeout is the limit). */
  const inFlight = async (n: number) => {
    while (slots.inFlight !== n) await new Promise((resolve) => setImmediate(resolve));
  };

  /**
   * A multipart upload to `path` announcing `declared` bytes, of which only the multipart head and the first bytes
   * of a file are sent: the rest never comes. `answer` is what the gateway answers (before the body, or never).
   */
  const trickle = (apiKey: string, path: string, declared = DECLARED) => {
    const url = new URL(f.gw.url);
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path,
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'multipart/form-data; boundary=x',
        'content-length': String(declared),
      },
    });
    const answer = new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : null }),
        );
      });
      req.on('error', reject);
    });
    const field = path.includes('audio') ? 'file' : 'image';
    req.write(
      `--x\r\nContent-Disposition: form-data; name="${field}"; filename="slow.png"\r\nContent-Type: image/png\r\n\r\n`,
    );
    req.write(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // Those left waiting are destroyed after the test (their answer then fails: nobody waits for it).
    answer.catch(() => undefined);
    const t = { req, answer };
    open.push(t);
    return t;
  };

  const png = () =>
    sharp({ create: { width: 16, height: 16, channels: 3, background: '#0a0' } })
      .png()
      .toBuffer();
  const edit = async (apiKey: string) =>
    new OpenAI({ apiKey, baseURL: `${f.gw.url}/v1`, maxRetries: 0 }).images.edit({
      model: 'gpt-image-1',
      image: await toFile(await png(), 'photo.png', { type: 'image/png' }),
      prompt: 'add a hat',
      response_format: 'b64_json',
    } as any);

  it("a key's share holds at most AI_UPLOADS_PER_KEY uploads: the next is 429 before its body is read, another key uploads", async () => {
    const busy = await f.createKey({ name: 'uploads-busy' });
    const trickles = Array.from({ length: PER_KEY }, () => trickle(busy.key, '/v1/images/edits'));
    await inFlight(PER_KEY);
    // Each counted twice: its files are copied into the form sent upstream while multer still holds them.
    expect(slots.bytesInFlight).toBe(2 * PER_KEY * DECLARED);

    // Only its head sent: answered at once, its body never read (nor counted), its connection closed.
    for (const path of ['/v1/images/edits', '/v1/audio/transcriptions']) {
      const refused = await trickle(busy.key, path).answer;
      expect([refused.status, refused.headers['retry-after'], refused.headers.connection]).toEqual([429, '1', 'close']);
      expect(refused.body).toEqual({
        error: {
          message: `Too many uploads in progress for this API key at once: at most ${PER_KEY} in a replica (AI_UPLOADS_PER_KEY); retry when one has finished`,
          type: 'rate_limit_error',
          code: 'uploads_in_flight',
          param: null,
        },
      });
    }
    expect([slots.inFlight, slots.bytesInFlight]).toEqual([PER_KEY, 2 * PER_KEY * DECLARED]);

    // Another key is admitted, and served.
    const other = await f.createKey({ name: 'uploads-other' });
    const edited = await edit(other.key);
    expect(edited.data).toHaveLength(1);
    expect(media.calls.filter((c) => c.path === '/v1/images/edits')).toHaveLength(1);

    // One of the key's uploads gone: its place is free again.
    trickles[0].req.destroy();
    await inFlight(PER_KEY - 1);
    trickle(busy.key, '/v1/images/edits');
    await inFlight(PER_KEY);
  });

  it("the keys of one project share the project's uploads; the replica's upload bytes are capped (503)", async () => {
    const project = (await f.admin('POST', '/admin/projects', { name: 'uploads-team' })).body;
    const [a, b, c] = await Promise.all(
      ['a', 'b', 'c'].map((n) => f.createKey({ name: `team-${n}`, project_id: project.id })),
    );
    for (let i = 0; i < PER_KEY / 2; i++) trickle(a.key, '/v1/images/edits');
    for (let i = 0; i < PER_KEY / 2; i++) trickle(b.key, '/v1/audio/transcriptions');
    await inFlight(PER_KEY);
    const refused = await trickle(c.key, '/v1/images/edits').answer;
    expect([refused.status, refused.body.error.code]).toEqual([429, 'uploads_in_flight']);

    // 1 200 000 of 2 000 000 bytes held (twice 600 000): a key outside the project announcing 450 000 more is refused.
    const outside = await f.createKey({ name: 'uploads-outside' });
    const full = await trickle(outside.key, '/v1/images/edits', 450_000).answer;
    expect([full.status, full.headers['retry-after'], full.body.error]).toEqual([
      503,
      '1',
      {
        message: 'The gateway holds as many uploads as it can right now (AI_UPLOAD_BYTES_IN_FLIGHT_MAX); retry shortly',
        type: 'service_unavailable',
        code: 'uploads_busy',
        param: null,
      },
    ]);
    // One that fits is admitted.
    trickle(outside.key, '/v1/images/edits', 350_000);
    await inFlight(PER_KEY + 1);
    expect(slots.bytesInFlight).toBe(2 * (PER_KEY * DECLARED + 350_000));
  });

  it('an upload arriving under 16 KiB/s is cut with 408 once the clock passes its grace, and its slot given back', async () => {
    const slow = await f.createKey({ name: 'uploads-slow' });
    const trickles = [trickle(slow.key, '/v1/images/edits'), trickle(slow.key, '/v1/audio/transcriptions')];
    await inFlight(2);
    clock.advance(UPLOAD_RATE_GRACE_MS);
    for (const { status, headers, body } of await Promise.all(trickles.map((t) => t.answer)))
      expect({ status, connection: headers.connection, body }).toEqual({
        status: 408,
        connection: 'close',
        body: {
          error: {
            message: 'the upload arrived too slowly: it must arrive at 16 KiB/s at least; retry on a faster connection',
            type: 'invalid_request_error',
            code: 'upload_too_slow',
            param: null,
          },
        },
      });
    expect([slots.inFlight, slots.bytesInFlight]).toEqual([0, 0]);
    expect(media.calls.filter((c) => c.path === '/v1/audio/transcriptions')).toEqual([]);
  });
});

// Moderations, audio translations, image edits and the streamed media answers, through openai-node
// 6.49 against a fake upstream speaking OpenAI's media protocols; every answer and event is validated
// with ajv against test/ai-gateway/conformance/schemas/media.ts, and each call's ledger row and spend checked.
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { decodeAudio, SpeechSynthesisEngine } from '@app/engines';
import { renderBlankPng } from '@app/engines/testing/media-fixtures';
import { crc32 } from 'zlib';
import { request as httpRequest } from 'http';
import { GatewayFixture, startGatewayFixture } from '../gateway-fixture';
import {
  audioTextJsonSchema,
  imagesResponseSchema,
  mediaEventSchemas,
  moderationResponseSchema,
  translationVerboseSchema,
} from '../conformance/schemas/media';
import { ledgerRows } from './ledger';
import { startMediaGateway } from './media-gateway';
import { MediaUpstream, startMediaUpstream } from './media-upstream';

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);

function conforms(schema: object, value: unknown): void {
  const validate = ajv.compile(schema);
  if (!validate(value))
    throw new Error(`does not conform: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 500)}`);
}

function conformsEvent(event: { type?: unknown }): void {
  const schema = mediaEventSchemas[String(event.type)];
  if (!schema) throw new Error(`unexpected event type ${String(event.type)}`);
  conforms(schema, event);
}

/** The `data:` payloads of a text/event-stream body, parsed. */
function sseData(text: string): any[] {
  return text
    .split(/\n\n/)
    .map((block) =>
      block
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n'),
    )
    .filter((d) => d && d !== '[DONE]')
    .map((d) => JSON.parse(d));
}

/** A 1x1 PNG whose header claims 100000x100000 pixels (its IHDR checksum fixed): tiny, but a 40 GB bitmap decoded. */
function pngBomb(): Buffer {
  const bomb = Buffer.from(renderBlankPng(1, 1));
  bomb.writeUInt32BE(100_000, 16);
  bomb.writeUInt32BE(100_000, 20);
  bomb.writeUInt32BE(crc32(bomb.subarray(12, 29)), 29);
  return bomb;
}

async function png(width: number, height: number, alpha = false): Promise<Buffer> {
  return sharp({
    create: {
      width,
      height,
      channels: alpha ? 4 : 3,
      background: alpha ? { r: 0, g: 0, b: 0, alpha: 0 } : { r: 10, g: 200, b: 90 },
    },
  })
    .png()
    .toBuffer();
}

const keyOf = async (f: GatewayFixture, id: string) => (await f.admin('GET', `/admin/keys/${id}`)).body;

describe('media operations: moderations, translations, image edits, streams (openai-node, fake upstream)', () => {
  let f: GatewayFixture;
  let media: MediaUpstream;
  let key: string;
  let keyId: string;
  let client: OpenAI;
  let speechWav: Buffer;
  let seconds: number;

  beforeAll(async () => {
    media = await startMediaUpstream();
    f = await startMediaGateway(media, { AI_MEDIA_MAX_IMAGE_BYTES: '200000', AI_MEDIA_MAX_EDIT_BYTES: '600000' });
    const created = await f.createKey({ name: 'media-operations', budget_yuan: 100 });
    key = created.key;
    keyId = created.id;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 30_000 });
    speechWav = (
      await SpeechSynthesisEngine.shared().synthesize('The weather is nice today. Please call me tomorrow.', {
        voice: 'en-US-JennyNeural',
        format: 'wav',
      })
    ).audio;
    seconds = (await decodeAudio(speechWav, { keepPcm: false })).duration;
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
    await SpeechSynthesisEngine.shared().close();
    delete process.env.FAKE_MEDIA_KEY;
  });
  beforeEach(() => (media.calls = []));

  describe('POST /v1/moderations', () => {
    it('classifies a string and an array of strings, billed per input', async () => {
      const before = (await keyOf(f, keyId)).spent_yuan;
      const one = await client.moderations.create({
        model: 'omni-moderation-latest',
        input: 'I will kill the process',
      });
      conforms(moderationResponseSchema, one);
      expect(one.results).toHaveLength(1);
      expect(one.results[0].flagged).toBe(true);
      const three = await client.moderations.create({ input: ['hello', 'kill', 'bye'] });
      conforms(moderationResponseSchema, three);
      expect(three.model).toBe('omni-moderation-latest');
      expect(three.results.map((r) => r.flagged)).toEqual([false, true, false]);
      expect(media.calls.map((c) => c.json.model)).toEqual(['omni-moderation-latest', 'omni-moderation-latest']);
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/moderations', 2, 5000, keyId);
      expect(rows.map((r) => Number(r.cost_yuan))).toEqual([0.01, 0.03]);
      expect((await keyOf(f, keyId)).spent_yuan).toBeCloseTo(before + 0.04, 6);
    });

    it('sends an image part upstream as checked bytes (data URL), never the caller URL', async () => {
      const image = await png(64, 48);
      const out = await client.moderations.create({
        input: [
          { type: 'text', text: 'is this fine?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${image.toString('base64')}` } },
        ],
      });
      conforms(moderationResponseSchema, out);
      expect(out.results).toHaveLength(1);
      expect(out.results[0].category_applied_input_types.violence).toEqual(['text', 'image']);
      const sent = media.calls[0].json.input[1].image_url.url as string;
      expect(Buffer.from(sent.replace(/^data:image\/png;base64,/, ''), 'base64').equals(image)).toBe(true);
    });

    it('refuses private and non-http image URLs and decode bombs with a 400 naming the problem, nothing sent or charged', async () => {
      const bomb = pngBomb();
      const cases: Array<[string, number, RegExp]> = [
        ['http://127.0.0.1:9/secret.png', 400, /image_url_forbidden|forbidden/],
        ['http://169.254.169.254/latest/meta-data', 400, /forbidden/],
        ['file:///etc/passwd', 400, /invalid_value/],
        [`data:image/png;base64,${bomb.toString('base64')}`, 400, /invalid_/],
      ];
      for (const [url, status, code] of cases) {
        const err: any = await client.moderations
          .create({ input: [{ type: 'image_url', image_url: { url } }] })
          .catch((e) => e);
        expect([url.slice(0, 30), err.status]).toEqual([url.slice(0, 30), status]);
        expect(err.error.code).toMatch(code);
      }
      expect(media.calls).toEqual([]);
      const bad: any = await client.moderations
        .create({ input: [{ type: 'video', video: 'x' } as any] })
        .catch((e) => e);
      expect(bad.status).toBe(400);
      expect(bad.error.param).toBe('input.0.type');
    });

    it('asks whether the model is served and the key can pay before fetching any image', async () => {
      // The URL would be refused as private if it were fetched: the answer shows which check ran first.
      const imagePart = { type: 'image_url' as const, image_url: { url: 'http://127.0.0.1:9/secret.png' } };
      const unserved: any = await client.moderations
        .create({ model: 'text-moderation-stable', input: [imagePart] })
        .catch((e) => e);
      expect([unserved.status, unserved.error.code]).toEqual([503, 'no_provider']);
      const broke = new OpenAI({
        apiKey: (await f.createKey({ name: 'no-budget', budget_yuan: 0 })).key,
        baseURL: `${f.gw.url}/v1`,
        maxRetries: 0,
      });
      const poor: any = await broke.moderations.create({ input: [imagePart] }).catch((e) => e);
      expect([poor.status, poor.error.code]).toEqual([429, 'insufficient_quota']);
      expect(media.calls).toEqual([]);
    });

    it('all images of one input together are at most AI_MEDIA_MAX_IMAGE_BYTES (413 naming the part), nothing sent or charged', async () => {
      const before = await keyOf(f, keyId);
      // Noise does not compress: each PNG is about 120 KB, under the 200000-byte limit alone, over it together.
      const noisy = async () =>
        sharp(Buffer.from(Array.from({ length: 200 * 200 * 3 }, () => Math.floor(Math.random() * 256))), {
          raw: { width: 200, height: 200, channels: 3 },
        })
          .png()
          .toBuffer();
      const [a, b] = [await noisy(), await noisy()];
      expect(a.length + b.length).toBeGreaterThan(200_000);
      const part = (x: Buffer) => ({
        type: 'image_url' as const,
        image_url: { url: `data:image/png;base64,${x.toString('base64')}` },
      });
      const err: any = await client.moderations.create({ input: [part(a), part(b)] }).catch((e) => e);
      expect([err.status, err.error.code, err.error.param]).toEqual([413, 'upload_too_large', 'input.1.image_url.url']);
      expect(media.calls).toEqual([]);
      const after = await keyOf(f, keyId);
      expect([after.spent_yuan, after.reserved_yuan]).toEqual([before.spent_yuan, 0]);
    });

    it('takes PNG, JPEG, WebP and still GIF images; TIFF, AVIF and animated GIFs are a 415 naming the part', async () => {
      // A 1x1 GIF frame (graphic control extension, image descriptor, LZW data); two of them make an animation.
      const head = Buffer.from('GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00', 'latin1');
      const frame = Buffer.from(
        '!\xf9\x04\x00\x0a\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00',
        'latin1',
      );
      const gif = (frames: number) =>
        Buffer.concat([head, ...Array.from({ length: frames }, () => frame), Buffer.from(';')]);
      const solid = sharp({ create: { width: 16, height: 16, channels: 3, background: '#c33' } });
      const url = (type: string, bytes: Buffer) => `data:image/${type};base64,${bytes.toString('base64')}`;
      const refused: Array<[string, string]> = [
        [url('tiff', await solid.clone().tiff().toBuffer()), 'tiff'],
        [url('avif', await solid.clone().avif().toBuffer()), 'heif'],
        [url('gif', gif(2)), 'an animated GIF'],
      ];
      for (const [image, what] of refused) {
        const err: any = await client.moderations
          .create({
            input: [
              { type: 'text', text: 'x' },
              { type: 'image_url', image_url: { url: image } },
            ],
          })
          .catch((e) => e);
        expect([what, err.status, err.error.code, err.error.param]).toEqual([
          what,
          415,
          'unsupported_media_type',
          'input.1.image_url.url',
        ]);
        expect(err.error.message).toContain(`image ${what} is not accepted`);
      }
      expect(media.calls).toEqual([]);
      const still = await client.moderations.create({
        input: [{ type: 'image_url', image_url: { url: url('gif', gif(1)) } }],
      });
      conforms(moderationResponseSchema, still);
      expect(media.calls[0].json.input[0].image_url.url).toMatch(/^data:image\/gif;base64,/);
    });

    it('answers 404 for an unknown model and 503 for a known one no deployment serves', async () => {
      const status = (model: string) =>
        client.moderations.create({ model, input: 'x' }).then(
          () => 200,
          (e: { status: number }) => e.status,
        );
      expect(await status('no-such-moderation')).toBe(404);
      expect(await status('text-moderation-stable')).toBe(503);
    });
  });

  describe('POST /v1/audio/translations', () => {
    it('forwards the audio and fields upstream, answers json / verbose_json / srt, billed per audio minute', async () => {
      const json = await client.audio.translations.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'whisper-1',
        prompt: 'Weather talk',
        temperature: 0.2,
      });
      conforms(audioTextJsonSchema, json);
      expect(json.text).toMatch(/^translated \d+\.\d seconds of wav into English$/);
      expect(media.calls[0]).toMatchObject({
        path: '/v1/audio/translations',
        form: { model: 'whisper-1', prompt: 'Weather talk', temperature: '0.2', response_format: 'json' },
      });
      expect(media.calls[0].file!.bytes.equals(speechWav)).toBe(true);
      const verbose = await client.audio.translations.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'whisper-1',
        response_format: 'verbose_json',
      });
      conforms(translationVerboseSchema, verbose);
      const srt: unknown = await client.audio.translations.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'whisper-1',
        response_format: 'srt',
      });
      expect(srt).toMatch(/^1\n00:00:00,000 --> /);
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/audio/translations', 3, 5000, keyId);
      expect(rows.every((r) => r.status === 'ok' && r.model === 'whisper-1')).toBe(true);
      expect(Number(rows[0].cost_yuan)).toBeCloseTo((Math.ceil(seconds) / 60) * 0.6, 6);
    });
  });

  describe('POST /v1/images/edits', () => {
    it('edits one image, and two images with a mask (image[]), forwarded as multipart and priced by quality', async () => {
      const photo = await png(64, 64);
      const one = await client.images.edit({
        model: 'gpt-image-1',
        image: await toFile(photo, 'photo.png', { type: 'image/png' }),
        prompt: 'add a hat',
        size: '1024x1024',
        quality: 'low',
        response_format: 'b64_json',
      } as any);
      conforms(imagesResponseSchema, one);
      expect(one.data).toHaveLength(1);
      expect(media.calls[0].files!.map((x) => x.field)).toEqual(['image']);
      expect(media.calls[0].form).toMatchObject({
        model: 'gpt-image-1',
        prompt: 'add a hat',
        quality: 'low',
        size: '1024x1024',
        n: '1',
      });

      const two = await client.images.edit({
        model: 'gpt-image-1',
        image: [
          await toFile(photo, 'a.png', { type: 'image/png' }),
          await toFile(await png(32, 32), 'b.png', { type: 'image/png' }),
        ],
        mask: await toFile(await png(64, 64, true), 'mask.png', { type: 'image/png' }),
        prompt: 'merge them',
        input_fidelity: 'high',
        quality: 'high',
        size: '1024x1024',
        n: 2,
      });
      conforms(imagesResponseSchema, two);
      expect(two.data!.map((d) => typeof d.url)).toEqual(['string', 'string']);
      expect(media.calls[1].files!.map((x) => x.field)).toEqual(['image[]', 'image[]', 'mask']);
      expect(media.calls[1].files![0].bytes.equals(photo)).toBe(true);
      expect(media.calls[1].form).toMatchObject({ input_fidelity: 'high', n: '2' });
      const stored = await fetch(two.data![0].url!);
      expect(stored.status).toBe(200);

      const rows = await ledgerRows(f.gw.dbUrl, '/v1/images/edits', 2, 5000, keyId);
      expect(rows.map((r) => [r.status, r.images, Number(r.cost_yuan)])).toEqual([
        ['ok', 1, 0.02],
        ['ok', 2, 0.6],
      ]);
    });

    it("input images are held and charged at the model's inputImagePrice (high fidelity at its own price)", async () => {
      const editor = await f.createKey({ name: 'edit-inputs', budget_yuan: 10 });
      const editClient = new OpenAI({ apiKey: editor.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      const file = async (name: string) => toFile(await png(16, 16), name, { type: 'image/png' });
      await editClient.images.edit({
        model: 'gpt-image-1-inputs',
        image: [await file('a.png'), await file('b.png')],
        prompt: 'p',
        size: '1024x1024',
      });
      await editClient.images.edit({
        model: 'gpt-image-1-inputs',
        image: [await file('a.png'), await file('b.png'), await file('c.png')],
        prompt: 'p',
        size: '1024x1024',
        input_fidelity: 'high',
        n: 2,
      });
      expect(media.calls.map((c) => c.form!.model)).toEqual(['gpt-image-1', 'gpt-image-1']);
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/images/edits', 2, 5000, editor.id);
      // 2 x 0.01 + 1 x 0.02 output; 3 x 0.05 (high fidelity) + 2 x 0.02 outputs.
      expect(rows.map((r) => Number(r.cost_yuan))).toEqual([0.04, 0.19]);
      // The hold covers the inputs: a budget for the outputs alone is refused before anything is sent.
      const tight = await f.createKey({ name: 'edit-inputs-tight', budget_yuan: 0.03 });
      const tightClient = new OpenAI({ apiKey: tight.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      const refused: any = await tightClient.images
        .edit({
          model: 'gpt-image-1-inputs',
          image: [await file('a.png'), await file('b.png')],
          prompt: 'p',
          size: '1024x1024',
          input_fidelity: 'high',
        })
        .catch((e) => e);
      expect([refused.status, refused.error.code]).toEqual([429, 'insufficient_quota']);
      expect(media.calls).toHaveLength(2);
    });

    it('refuses an oversize image (413), a decode bomb (400), a non-image (415) and a bad mask (400) before sending or charging', async () => {
      const before = await keyOf(f, keyId);
      const bomb = pngBomb();
      const edit = (image: Buffer, mask?: Buffer) =>
        (async () =>
          client.images.edit({
            model: 'gpt-image-1',
            image: await toFile(image, 'x.png', { type: 'image/png' }),
            ...(mask ? { mask: await toFile(mask, 'm.png', { type: 'image/png' }) } : {}),
            prompt: 'p',
          }))().catch((e) => e);
      const big: any = await edit(Buffer.concat([await png(8, 8), Buffer.alloc(300_000)]));
      expect(big.status).toBe(413);
      const bombed: any = await edit(bomb);
      expect([bombed.status, bombed.error.param]).toEqual([400, 'image']);
      expect(bombed.error.message).toMatch(/100000x100000 pixels/);
      const text: any = await edit(Buffer.from('not an image at all, just text'));
      expect(text.status).toBe(415);
      const wrongSize: any = await edit(await png(64, 64), await png(32, 32, true));
      expect([wrongSize.status, wrongSize.error.param]).toEqual([400, 'mask']);
      const jpegMask: any = await edit(
        await png(64, 64),
        await sharp({ create: { width: 64, height: 64, channels: 3, background: '#fff' } })
          .jpeg()
          .toBuffer(),
      );
      expect([jpegMask.status, jpegMask.error.param]).toEqual([400, 'mask']);
      expect(media.calls).toEqual([]);
      const after = await keyOf(f, keyId);
      expect([after.spent_yuan, after.reserved_yuan]).toEqual([before.spent_yuan, 0]);
    });
  });

  describe('POST /v1/images/edits, upload limits before any file is read', () => {
    /** A raw multipart request: `declared` as its Content-Length (or chunked), only `send` of the body written until the answer comes. */
    function rawEdit(
      apiKey: string,
      body: Buffer,
      o: { declared?: number; chunked?: boolean; send?: number },
    ): Promise<{ status: number; body: any }> {
      return new Promise((resolve, reject) => {
        const url = new URL(`${f.gw.url}/v1/images/edits`);
        const headers: Record<string, string | number> = {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'multipart/form-data; boundary=XyZ',
        };
        if (o.chunked) headers['transfer-encoding'] = 'chunked';
        else headers['content-length'] = o.declared ?? body.length;
        const req = httpRequest(
          { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              req.destroy();
              resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') });
            });
          },
        );
        req.on('error', reject);
        req.write(body.subarray(0, o.send ?? body.length));
        if (o.send === undefined) req.end();
      });
    }
    const part = (name: string, file: Buffer) =>
      Buffer.concat([
        Buffer.from(
          `--XyZ\r\ncontent-disposition: form-data; name="${name}"; filename="x.png"\r\ncontent-type: image/png\r\n\r\n`,
        ),
        file,
        Buffer.from('\r\n'),
      ]);
    const form = (...files: Buffer[]) =>
      Buffer.concat([
        Buffer.from('--XyZ\r\ncontent-disposition: form-data; name="prompt"\r\n\r\np\r\n'),
        ...files.map((x) => part('image[]', x)),
        Buffer.from('--XyZ--\r\n'),
      ]);

    it('a key without the vision scope is refused (403) before its files are read, even an oversize one', async () => {
      const chatOnly = (await f.createKey({ name: 'chat-only', scopes: ['chat'] })).key;
      const oversize = Buffer.concat([await png(8, 8), Buffer.alloc(300_000)]);
      const refused = await rawEdit(chatOnly, form(oversize), {});
      expect([refused.status, refused.body.error?.code]).toEqual([403, 'scope_not_allowed']);
      // Only the headers and a first slice written: the answer comes without the body.
      const early = await rawEdit(chatOnly, form(oversize), { send: 100 });
      expect(early.status).toBe(403);
      expect(media.calls).toEqual([]);
    });

    it('an upload larger than AI_MEDIA_MAX_EDIT_BYTES in all is a 413 by its Content-Length; a chunked one a 411; nothing sent or charged', async () => {
      const before = await keyOf(f, keyId);
      // Four files each under AI_MEDIA_MAX_IMAGE_BYTES (200000), together past AI_MEDIA_MAX_EDIT_BYTES (600000).
      const file = Buffer.concat([await png(8, 8), Buffer.alloc(190_000)]);
      const total = await rawEdit(key, form(file, file, file, file), {});
      expect([total.status, total.body.error?.code]).toEqual([413, 'upload_too_large']);
      expect(total.body.error.message).toMatch(/600000 bytes.*AI_MEDIA_MAX_EDIT_BYTES/);
      const early = await rawEdit(key, form(file), { declared: 50_000_000, send: 100 });
      expect([early.status, early.body.error?.code]).toEqual([413, 'upload_too_large']);
      const chunked = await rawEdit(key, form(await png(8, 8)), { chunked: true });
      expect([chunked.status, chunked.body.error?.code]).toEqual([411, 'length_required']);
      expect(media.calls).toEqual([]);
      const after = await keyOf(f, keyId);
      expect([after.spent_yuan, after.reserved_yuan]).toEqual([before.spent_yuan, 0]);
    });
  });

  describe('POST /v1/images/edits, JSON form', () => {
    it('images by URL or file id: 400 naming images and multipart, nothing sent', async () => {
      for (const images of [[{ image_url: 'https://example.com/a.png' }], [{ file_id: 'file-abc123' }]]) {
        const res = await fetch(`${f.gw.url}/v1/images/edits`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-image-1', prompt: 'p', images }),
        });
        const body = await res.json();
        expect([res.status, body.error.param, body.error.code]).toEqual([400, 'images', 'unsupported_parameter']);
        expect(body.error.message).toMatch(/multipart\/form-data/);
      }
      expect(media.calls).toEqual([]);
    });
  });

  describe('streams', () => {
    it('transcriptions stream=true: the upstream transcript.text events, settled at the end', async () => {
      const stream = await client.audio.transcriptions.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'gpt-4o-transcribe',
        stream: true,
      });
      const events: any[] = [];
      for await (const event of stream) events.push(event);
      events.forEach(conformsEvent);
      expect(events.at(-1).type).toBe('transcript.text.done');
      expect(events.filter((e) => e.type === 'transcript.text.delta').length).toBeGreaterThan(0);
      expect(media.calls[0].form).toMatchObject({ stream: 'true', model: 'gpt-4o-transcribe' });
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/speech/transcribe', 1, 5000, keyId);
      expect(rows.at(-1)).toMatchObject({ status: 'ok', model: 'gpt-4o-transcribe' });
      expect(Number(rows.at(-1)!.cost_yuan)).toBeCloseTo((Math.ceil(seconds) / 60) * 0.02, 6);
    });

    it('transcriptions stream=true with whisper-1 (the upstream answers JSON): relayed as transcript.text.done', async () => {
      const own = await f.createKey({ name: 'whisper-stream', budget_yuan: 10 });
      const ownClient = new OpenAI({ apiKey: own.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      const stream = await ownClient.audio.transcriptions.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'whisper-1',
        stream: true,
      });
      const events: any[] = [];
      for await (const event of stream) events.push(event);
      events.forEach(conformsEvent);
      expect(events).toEqual([
        { type: 'transcript.text.done', text: expect.stringMatching(/^heard \d+ utterance\(s\) in /) },
      ]);
      expect(media.calls[0].form).toMatchObject({ stream: 'true', model: 'whisper-1' });
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/speech/transcribe', 1, 5000, own.id);
      expect(rows.map((r) => [r.status, r.model])).toEqual([['ok', 'whisper-1']]);
      expect(Number(rows[0].cost_yuan)).toBeCloseTo((Math.ceil(seconds) / 60) * 0.6, 6);
    });

    it('transcriptions pass chunking_strategy, known speakers and diarized_json upstream', async () => {
      const out: any = await client.audio.transcriptions.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'gpt-4o-transcribe',
        response_format: 'diarized_json',
        chunking_strategy: { type: 'server_vad', silence_duration_ms: 300 },
        known_speaker_names: ['agent'],
        known_speaker_references: ['data:audio/wav;base64,UklGRgAAAAA='],
      } as any);
      expect(out.segments[0].speaker).toBe('agent');
      expect(media.calls[0].formAll).toMatchObject({
        response_format: ['diarized_json'],
        'chunking_strategy[type]': ['server_vad'],
        'chunking_strategy[silence_duration_ms]': ['300'],
        'known_speaker_names[]': ['agent'],
        'known_speaker_references[]': ['data:audio/wav;base64,UklGRgAAAAA='],
      });
    });

    it('speech stream_format sse: one speech.audio.delta with the whole audio, then speech.audio.done', async () => {
      const res = await client.audio.speech.create({
        model: 'gpt-4o-mini-tts',
        input: 'Hello there.',
        voice: 'alloy',
        response_format: 'wav',
        stream_format: 'sse',
      });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = sseData(await res.text());
      events.forEach(conformsEvent);
      expect(events.map((e) => e.type)).toEqual(['speech.audio.delta', 'speech.audio.done']);
      const audio = await decodeAudio(Buffer.from(events[0].audio, 'base64'), { keepPcm: false });
      expect(audio.container).toBe('wav');
      expect(audio.duration).toBeGreaterThan(0.3);
    });

    it('images generate stream with partial_images: the upstream events forwarded, billed per completed image', async () => {
      const stream = await client.images.generate({
        model: 'gpt-image-1',
        prompt: 'a lighthouse',
        size: '1024x1024',
        quality: 'low',
        stream: true,
        partial_images: 2,
      });
      const events: any[] = [];
      for await (const event of stream) events.push(event);
      events.forEach(conformsEvent);
      expect(events.map((e) => e.type)).toEqual([
        'image_generation.partial_image',
        'image_generation.partial_image',
        'image_generation.completed',
      ]);
      expect(media.calls[0].json).toMatchObject({ stream: true, partial_images: 2, model: 'gpt-image-1' });
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/vision/generate', 1, 5000, keyId);
      expect(rows.at(-1)).toMatchObject({ status: 'ok', images: 1 });
      expect(Number(rows.at(-1)!.cost_yuan)).toBeCloseTo(0.02, 6);
      expect((await keyOf(f, keyId)).reserved_yuan).toBe(0);
    });

    it('images edit stream: image_edit events forwarded', async () => {
      const stream = await client.images.edit({
        model: 'gpt-image-1',
        image: await toFile(await png(64, 64), 'p.png', { type: 'image/png' }),
        prompt: 'x',
        size: '1024x1024',
        quality: 'low',
        stream: true,
        partial_images: 1,
      });
      const events: any[] = [];
      for await (const event of stream) events.push(event);
      events.forEach(conformsEvent);
      expect(events.map((e) => e.type)).toEqual(['image_edit.partial_image', 'image_edit.completed']);
    });

    it('a client that leaves an image stream before it completes pays the hold', async () => {
      const leaver = await f.createKey({ name: 'stream-leaver', budget_yuan: 10 });
      media.imageStream = 'stall';
      const abort = new AbortController();
      const res = await fetch(`${f.gw.url}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${leaver.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'gpt-image-1',
          prompt: 'x',
          size: '1024x1024',
          quality: 'high',
          stream: true,
          partial_images: 2,
        }),
        signal: abort.signal,
      });
      // The first partial image arrives (the second is held back until a next event), then the client hangs up.
      const reader = res.body!.getReader();
      let text = '';
      while (!text.includes('image_generation.partial_image'))
        text += new TextDecoder().decode((await reader.read()).value);
      abort.abort();
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/vision/generate', 1, 5000, leaver.id);
      expect([rows[0].status, Number(rows[0].cost_yuan), rows[0].images]).toEqual(['aborted', 0.3, 0]);
      const after = await keyOf(f, leaver.id);
      expect([after.spent_yuan, after.reserved_yuan]).toEqual([0.3, 0]);
    });

    it('an image stream cut after a completed image is charged for the images delivered', async () => {
      const cut = await f.createKey({ name: 'stream-cut', budget_yuan: 10 });
      media.imageStream = 'stall-after-completed';
      const cutClient = new OpenAI({ apiKey: cut.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      const stream = await cutClient.images.generate({
        model: 'gpt-image-1',
        prompt: 'x',
        size: '1024x1024',
        quality: 'low',
        n: 2,
        stream: true,
        partial_images: 1,
      });
      const events: any[] = [];
      const failure = await (async () => {
        for await (const event of stream) {
          events.push(event);
          // The partial image is written once the completed one reached the gateway: now the upstream fails.
          if (event.type === 'image_generation.partial_image') media.cutStreams();
        }
      })().catch((e) => e);
      // The completed image is delivered, then the error event (which openai-node throws).
      expect(events.map((e) => e.type)).toEqual(['image_generation.partial_image', 'image_generation.completed']);
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/vision/generate', 1, 5000, cut.id);
      expect([rows[0].status, Number(rows[0].cost_yuan), rows[0].images]).toEqual(['aborted', 0.02, 1]);
    });

    it('a failing upstream stream releases the hold (nothing charged)', async () => {
      const before = await keyOf(f, keyId);
      media.failNext = 500;
      const err: any = await client.images
        .generate({ model: 'gpt-image-1', prompt: 'x', size: '1024x1024', quality: 'high', stream: true })
        .catch((e) => e);
      expect(err.status).toBe(502);
      const after = await keyOf(f, keyId);
      expect([after.spent_yuan, after.reserved_yuan]).toEqual([before.spent_yuan, 0]);
    });
  });
});

describe('media operations on the local engines only (clear refusals)', () => {
  let f: GatewayFixture;
  let client: OpenAI;
  let speechWav: Buffer;

  beforeAll(async () => {
    f = await startGatewayFixture({});
    client = new OpenAI({
      apiKey: (await f.createKey({ name: 'local-media' })).key,
      baseURL: `${f.gw.url}/v1`,
      maxRetries: 0,
      timeout: 60_000,
    });
    speechWav = (
      await SpeechSynthesisEngine.shared().synthesize('The weather is nice today. Please call me tomorrow.', {
        voice: 'en-US-JennyNeural',
        format: 'wav',
      })
    ).audio;
  });
  afterAll(async () => {
    await f?.close();
    await SpeechSynthesisEngine.shared().close();
  });

  it('translations: 400 saying the local engine cannot translate', async () => {
    const err: any = await client.audio.translations
      .create({ file: await toFile(speechWav, 's.wav'), model: 'whisper-1' })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error.message).toMatch(/cannot translate|only transcribes/);
  });

  it('diarized_json and known speakers: 400 naming the field', async () => {
    const err: any = await client.audio.transcriptions
      .create({ file: await toFile(speechWav, 's.wav'), model: 'whisper-1', response_format: 'diarized_json' } as any)
      .catch((e) => e);
    expect([err.status, err.error.param]).toEqual([400, 'response_format']);
    expect(err.error.message).toMatch(/does not tell speakers apart/);
  });

  it('transcriptions stream=true: one delta per utterance, then done with the whole text', async () => {
    const stream = await client.audio.transcriptions.create({
      file: await toFile(speechWav, 's.wav'),
      model: 'whisper-1',
      stream: true,
    });
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    events.forEach(conformsEvent);
    expect(events.at(-1).type).toBe('transcript.text.done');
    expect(
      events
        .filter((e) => e.type === 'transcript.text.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe(events.at(-1).text);
  });
});

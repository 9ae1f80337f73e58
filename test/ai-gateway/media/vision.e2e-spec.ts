import { readFileSync } from 'fs';
import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import sharp from 'sharp';
import { OcrEngine, VisionEngine } from '@app/engines';
import { facesPhotoPath, renderTextPng } from '@app/engines/testing/media-fixtures';
import { GatewayFixture, startGatewayFixture } from '../gateway-fixture';
import { ledgerRows } from './ledger';

describe('POST /v1/vision/recognize (local engines, real HTTP)', () => {
  let f: GatewayFixture;
  let key: string;
  const recognize = (body: unknown, auth = key) =>
    fetch(`${f.gw.url}/v1/vision/recognize`, {
      method: 'POST',
      headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    f = await startGatewayFixture({
      AI_LOCAL_STT: 'false',
      AI_MEDIA_MAX_IMAGE_BYTES: '2000000',
      AI_MEDIA_MAX_PIXELS: '4000000',
    });
    key = (await f.createKey({ name: 'vision', scopes: ['vision'] })).key;
  });
  afterAll(async () => {
    await f?.close();
    await Promise.all([OcrEngine.shared().close(), VisionEngine.shared().close()]);
  });

  it('reads Chinese and English text from a rendered PNG sent as a data URL, billed as OCR', async () => {
    const png = renderTextPng(['会员服务平台', 'Hello OCR 2026']);
    const started = Date.now();
    const res = await recognize({ image: `data:image/png;base64,${png.toString('base64')}`, features: ['text'] });
    const ms = Date.now() - started;
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(Object.keys(body)).toEqual(['text']);
    expect(body.text.map((t: any) => t.content)).toEqual(['会员服务平台', 'Hello OCR 2026']);
    expect(body.text[0].confidence).toBeGreaterThan(0.8);
    console.log(`recognize text over HTTP (first call, engine load included): ${ms} ms`);
    const [row] = await ledgerRows(f.gw.dbUrl, '/v1/vision/recognize');
    expect({ status: row.status, cost: Number(row.cost_yuan) }).toEqual({ status: 'ok', cost: 0.01 });
  });

  it('finds faces, objects and labels in a shipped photo sent as bare base64, billed per feature', async () => {
    const photo = readFileSync(facesPhotoPath());
    const started = Date.now();
    const res = await recognize({ image: photo.toString('base64'), features: ['faces', 'objects', 'labels'] });
    console.log(
      `recognize faces+objects+labels over HTTP (first call, engine load included): ${Date.now() - started} ms`,
    );
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.faces.filter((x: any) => x.bounding_box.y > 330).length).toBe(5);
    for (const face of body.faces) expect(face.confidence).toBeGreaterThanOrEqual(0.5);
    expect(body.objects.some((o: any) => o.name === 'person' && typeof o.bounding_box.width === 'number')).toBe(true);
    expect(body.labels.map((l: any) => l.name)).toEqual(expect.arrayContaining(['person', 'face']));
    const rows = await ledgerRows(f.gw.dbUrl, '/v1/vision/recognize', 2);
    expect(Number(rows[1].cost_yuan)).toBe(0.04); // faces 0.01 + objects 0.02 + labels 0.01

    const again = Date.now();
    expect((await recognize({ image: photo.toString('base64'), features: ['faces'] })).status).toBe(200);
    console.log(`recognize faces over HTTP (warm): ${Date.now() - again} ms`);
  });

  it('validates features, image and language with clear 4xx', async () => {
    const png = renderTextPng(['x']).toString('base64');
    const cases: Array<[unknown, number, string | null]> = [
      [{ image: png, features: ['colors'] }, 400, 'features'],
      [{ image: png, features: [] }, 400, 'features'],
      [{ image: png }, 400, 'features'],
      [{ features: ['text'] }, 400, 'image'],
      [{ image: png, features: ['text'], language: 'ja' }, 400, 'language'],
      [{ image: 'bm90IGFuIGltYWdl', features: ['labels'] }, 415, 'image'], // bytes that are no image format
      [{ image: 'ftp://example.com/x.png', features: ['labels'] }, 400, 'image'],
      [{ image: png, features: ['text'], extra: 1 }, 400, null],
    ];
    for (const [body, status, param] of cases) {
      const res = await recognize(body);
      const json = await res.json();
      expect([JSON.stringify(body).slice(0, 60), res.status]).toEqual([JSON.stringify(body).slice(0, 60), status]);
      if (param) expect(json.error.param).toBe(param);
    }
  });

  it('caps bytes (413) and decoded pixels (400)', async () => {
    const big = Buffer.alloc(2_100_000, 7).toString('base64');
    expect((await recognize({ image: big, features: ['labels'] })).status).toBe(413);
    const wide = await sharp({ create: { width: 2500, height: 2000, channels: 3, background: '#fff' } })
      .png()
      .toBuffer();
    const res = await recognize({ image: wide.toString('base64'), features: ['labels'] });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toMatch(/pixels/);
  });

  it('needs an API key with the vision scope', async () => {
    expect((await recognize({ image: 'x', features: ['text'] }, 'sk-nope')).status).toBe(401);
    const speechOnly = (await f.createKey({ name: 'speech only', scopes: ['speech'] })).key;
    const res = await recognize({ image: renderTextPng(['x']).toString('base64'), features: ['text'] }, speechOnly);
    expect(res.status).toBe(403);
  });

  describe('image URLs (SSRF)', () => {
    let imageServer: Server;
    let imagePort: number;
    let hits: string[];
    beforeAll(async () => {
      hits = [];
      imageServer = createServer((req, res) => {
        hits.push(req.url!);
        res.writeHead(200, { 'content-type': 'image/png' }).end(renderTextPng(['内网图片']));
      });
      await new Promise<void>((r) => imageServer.listen(0, '127.0.0.1', r));
      imagePort = (imageServer.address() as AddressInfo).port;
    });
    afterAll(() => new Promise((r) => imageServer.close(r)));

    it.each([
      ['loopback', () => `http://127.0.0.1:${imagePort}/a.png`],
      ['the gateway itself', () => `${f.gw.url}/health`],
      ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/iam/security-credentials/'],
      ['IPv6 loopback', () => `http://[::1]:${imagePort}/a.png`],
      ['a DNS name resolving to loopback', () => `http://localhost:${imagePort}/a.png`],
      ['IPv4-mapped IPv6', () => `http://[::ffff:127.0.0.1]:${imagePort}/a.png`],
      ['private range', () => 'http://10.0.0.1/a.png'],
    ])('refuses %s', async (_name, url) => {
      const res = await recognize({ image: url(), features: ['text'] });
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe('image_url_forbidden');
      expect(hits).toEqual([]);
    });
  });

  it('answers 503 for speech-to-text and image generation when no engine or upstream is configured', async () => {
    const all = (await f.createKey({ name: 'all' })).key;
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(100)]), 'a.wav');
    const stt = await fetch(`${f.gw.url}/v1/speech/transcribe`, {
      method: 'POST',
      headers: { authorization: `Bearer ${all}` },
      body: form,
    });
    expect(stt.status).toBe(503);
    expect((await stt.json()).error.message).toMatch(/AI_TRANSCRIBE_BASE_URL/);
    const gen = await fetch(`${f.gw.url}/v1/vision/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${all}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'a cat' }),
    });
    expect(gen.status).toBe(503);
  });
});

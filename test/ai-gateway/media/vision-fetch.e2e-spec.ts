import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import { OcrEngine } from '@app/engines';
import { renderTextPng } from '@app/engines/testing/media-fixtures';
import { GatewayFixture, startGatewayFixture } from '../gateway-fixture';

// A gateway that may reach exactly 127.0.0.1 (where the test's image server lives): the positive
// path over a URL, and redirects from there to every other private target, each refused.
describe('POST /v1/vision/recognize with image URLs (redirects re-checked)', () => {
  let f: GatewayFixture;
  let key: string;
  let server: Server;
  let base: string;
  let hits: string[] = [];
  const png = renderTextPng(['网址图片 URL image']);
  const recognize = (image: string) =>
    fetch(`${f.gw.url}/v1/vision/recognize`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ image, features: ['text'] }),
    });

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url!);
      const [path, query] = req.url!.split('?');
      if (path === '/text.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
      if (path === '/redirect') return void res.writeHead(302, { location: decodeURIComponent(query) }).end();
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    f = await startGatewayFixture({ AI_MEDIA_FETCH_ALLOWED_CIDRS: '127.0.0.1/32', AI_MEDIA_FETCH_TIMEOUT_MS: '3000' });
    key = (await f.createKey({ name: 'vision' })).key;
  });
  afterAll(async () => {
    await f?.close();
    await new Promise((r) => server.close(r));
    await OcrEngine.shared().close();
  });
  beforeEach(() => (hits = []));

  it('downloads an allowed URL, also through a redirect, and reads its text', async () => {
    for (const url of [`${base}/text.png`, `${base}/redirect?${encodeURIComponent('/text.png')}`]) {
      const res = await recognize(url);
      expect(res.status).toBe(200);
      expect((await res.json()).text.map((t: any) => t.content.replace(/\s+/g, ''))).toEqual(['网址图片URLimage']);
    }
    expect(hits).toEqual(['/text.png', expect.stringMatching(/^\/redirect/), '/text.png']);
  });

  it.each([
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/'],
    ['IPv6 loopback', 'http://[::1]/x.png'],
    ['another loopback address', 'http://127.0.0.2/x.png'],
    ['a private network', 'http://192.168.1.1/x.png'],
    ['link-local IPv6', 'http://[fe80::1]/x.png'],
  ])('refuses a redirect to %s after the first hop', async (_name, target) => {
    const res = await recognize(`${base}/redirect?${encodeURIComponent(target)}`);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe('image_url_forbidden');
    expect(hits).toEqual([expect.stringMatching(/^\/redirect/)]);
  });

  it('reports an upstream 404 as the one generic fetch failure (no status, host or port echoed)', async () => {
    const res = await recognize(`${base}/missing.png`);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({
      message: 'image URL could not be fetched',
      code: 'image_fetch_failed',
    });
  });
});

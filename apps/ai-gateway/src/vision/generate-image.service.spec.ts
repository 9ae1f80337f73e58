import { Tokenizer } from '../tokenizer/tokenizer';
import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import { GatewayError, openAiErrorBody } from '../errors';
import { EngineInputError } from '@app/engines';
import { GatewayConfig } from '../config/gateway.config';
import { GenerateImageService } from './generate-image.service';

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6300010000000500010d0a2db40000000049454e44ae426082',
  'hex',
);

describe('GenerateImageService: image URLs in the upstream answer (SSRF class sweep)', () => {
  let server: Server;
  let base: string;
  let hits: string[] = [];
  let answerUrl = '';

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url!);
      if (req.url === '/v1/images/generations') {
        req.resume();
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ data: [{ url: answerUrl }] }));
      }
      if (req.url === '/internal/secret.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));
  beforeEach(() => (hits = []));

  const service = (extra: Partial<GatewayConfig> = {}) => {
    const config = Object.assign(new GatewayConfig(), {
      AI_IMAGES_BASE_URL: `${base}/v1`,
      AI_IMAGES_MODEL: 'img',
      ...extra,
    });
    const stored: string[] = [];
    const metering = { reserve: async () => ({}), settle: async () => undefined };
    // The images' store (GeneratedImageStore, against PostgreSQL in test/ai-gateway/media/image-retention.e2e-spec.ts).
    const store = {
      hold: async () => ({ id: 'hold', keyId: 'k', bytes: 0 }),
      keep: async (_hold: unknown, images: unknown[]) =>
        images.map((_, i) => (stored.push(`image-${i}`), `image-${i}`)),
      release: async () => undefined,
    };
    return { svc: new GenerateImageService(config, metering as any, store as any, new Tokenizer()), stored };
  };
  const principal = { id: 'k', kind: 'api-key', roles: [], claims: {} } as any;

  it.each([
    ['loopback', () => `${base}/internal/secret.png`],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
    ['IPv4-translated loopback', () => `http://[::ffff:0:127.0.0.1]:${new URL(base).port}/internal/secret.png`],
  ])('refuses an upstream answer pointing at %s, without fetching it', async (_name, url) => {
    answerUrl = url();
    const { svc, stored } = service();
    const error = await svc.generate(principal, { prompt: 'p', size: '1024x1024', n: 1 }).then(
      () => null,
      (e) => e,
    );
    expect(error).toBeInstanceOf(GatewayError);
    expect(error.getStatus()).toBe(502);
    expect(hits).toEqual(['/v1/images/generations']);
    expect(stored).toEqual([]);
  });

  it('downloads from an address the operator allowed', async () => {
    answerUrl = `${base}/internal/secret.png`;
    const { svc, stored } = service({ AI_MEDIA_FETCH_ALLOWED_CIDRS: '127.0.0.1/32' });
    const [image] = await svc.generate(principal, { prompt: 'p', size: '1024x1024', n: 1 });
    expect(image.bytes.equals(PNG)).toBe(true);
    expect(stored).toHaveLength(1);
  });

  it("an edit's input failure names the image field, a generation's the prompt", async () => {
    const { svc } = service();
    const refuse = async () => {
      throw new EngineInputError('image could not be decoded');
    };
    (svc as any).client = { editImages: refuse, editImagesStream: refuse, generateImages: refuse };
    const edit = await svc.edit(principal, { prompt: 'p', size: '1024x1024', n: 1, images: [{ buffer: PNG }] }).then(
      () => null,
      (e) => e,
    );
    expect([edit.getStatus(), openAiErrorBody(edit).body.error.param]).toEqual([400, 'image']);
    const generation = await svc.generate(principal, { prompt: 'p', size: '1024x1024', n: 1 }).then(
      () => null,
      (e) => e,
    );
    expect(openAiErrorBody(generation).body.error.param).toBe('prompt');
  });
});

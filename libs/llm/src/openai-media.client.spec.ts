import { randomBytes } from 'crypto';
import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import { OpenAiMediaClient } from './openai-media.client';
import { UpstreamError } from './types';
import { recordingPace } from '../../../test/support/recording-pace';

/** An OpenAI-protocol images upstream answering whatever the test sets, in chunks of 16 KiB. */
class ImagesUpstream {
  private server!: Server;
  url = '';
  answer: { status: number; body: string } = { status: 200, body: '{}' };

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const bytes = Buffer.from(this.answer.body);
        res.writeHead(this.answer.status, { 'content-type': 'application/json', 'content-length': bytes.length });
        for (let at = 0; at < bytes.length; at += 16 * 1024) res.write(bytes.subarray(at, at + 16 * 1024));
        res.end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

describe('OpenAiMediaClient: images answers', () => {
  let upstream: ImagesUpstream;
  let client: OpenAiMediaClient;
  const request = { model: 'gpt-image-1', prompt: 'a lighthouse', n: 3, size: '1024x1024' };

  beforeAll(async () => {
    upstream = await new ImagesUpstream().start();
    client = new OpenAiMediaClient({ baseUrl: upstream.url, timeoutMs: 10_000 });
  });
  afterAll(() => upstream.close());

  it('a large answer is joined, parsed an image at a time and decoded on the pace: the same images as one JSON.parse', async () => {
    const images = [randomBytes(300_000), randomBytes(1), randomBytes(200_001)];
    upstream.answer = {
      status: 200,
      body: JSON.stringify({
        created: 1,
        data: images.map((b, i) => ({ b64_json: b.toString('base64'), revised_prompt: `revised ${i}` })),
      }),
    };
    const pace = recordingPace();
    const got = await client.generateImages(request, undefined, pace);
    expect(got.map((g, i) => g.bytes.equals(images[i]))).toEqual([true, true, true]);
    expect(got.map((g) => g.revisedPrompt)).toEqual(['revised 0', 'revised 1', 'revised 2']);
    // Charged for the bytes joined and parsed (16 a unit, twice over: the join, then the parse).
    expect(pace.units).toBeGreaterThanOrEqual(Math.floor((2 * Buffer.byteLength(upstream.answer.body)) / 16) - 2);
    expect(pace.turns).toBeGreaterThan(0);

    // Without a pace, or under the size where slicing pays, the same images from one parse.
    const plain = await client.generateImages(request);
    expect(plain.map((g, i) => g.bytes.equals(images[i]))).toEqual([true, true, true]);
  });

  it('a small answer is parsed whole, charging nothing', async () => {
    const image = randomBytes(100);
    upstream.answer = {
      status: 200,
      body: JSON.stringify({ created: 1, data: [{ b64_json: image.toString('base64') }] }),
    };
    const pace = recordingPace();
    const [got] = await client.generateImages({ ...request, n: 1 }, undefined, pace);
    expect(got.bytes.equals(image)).toBe(true);
    expect(pace.units).toBe(0);
  });

  it('a large answer that is not JSON is a protocol error; a large error answer keeps its message', async () => {
    upstream.answer = { status: 200, body: `{"created":1,"data":[{"b64_json":"${'A'.repeat(100_000)}"}` };
    const broken = await client.generateImages(request, undefined, recordingPace()).catch((e: unknown) => e);
    expect(broken).toBeInstanceOf(UpstreamError);
    expect(broken).toMatchObject({ kind: 'protocol', status: 200 });

    upstream.answer = {
      status: 400,
      body: JSON.stringify({
        error: { message: 'prompt refused', type: 'invalid_request_error', pad: 'x'.repeat(70_000) },
      }),
    };
    const refused = await client.generateImages(request, undefined, recordingPace()).catch((e: unknown) => e);
    expect(refused).toMatchObject({ kind: 'http', status: 400, message: 'prompt refused' });
  });
});

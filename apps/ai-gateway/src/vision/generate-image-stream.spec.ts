import { Tokenizer } from '../tokenizer/tokenizer';
import { GatewayError } from '../errors';
import { UpstreamError } from '@app/llm';
import { GatewayConfig } from '../config/gateway.config';
import { GenerateImageService } from './generate-image.service';

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6300010000000500010d0a2db40000000049454e44ae426082',
  'hex',
);

describe('GenerateImageService.stream: events and settlement, no HTTP', () => {
  const config = Object.assign(new GatewayConfig(), {
    AI_IMAGES_BASE_URL: 'http://upstream.invalid/v1',
    AI_IMAGES_MODEL: 'img',
  });
  const principal = { id: 'key-1', kind: 'api-key', roles: [], claims: {} } as any;
  // Two 1024x1024 images at 0.10 yuan each (media-prices.ts): a hold of 0.2.
  const input = { prompt: 'a lighthouse', size: '1024x1024', n: 2, partialImages: 1 };
  const partial = { type: 'image_generation.partial_image', partial_image_index: 0, b64_json: PNG.toString('base64') };
  const completed = { type: 'image_generation.completed', b64_json: PNG.toString('base64') };

  const setup = (upstream: () => AsyncIterable<Record<string, unknown>>) => {
    const reserved: any[] = [];
    const settled: any[] = [];
    const sent: any[] = [];
    const metering = {
      reserve: async (_p: unknown, hold: unknown) => (reserved.push(hold), {}),
      settle: async (_r: unknown, outcome: unknown) => void settled.push(outcome),
    };
    const service = new GenerateImageService(
      config,
      metering as any,
      { hold: async () => ({}), keep: async () => [], release: async () => undefined } as any,
      new Tokenizer(),
    );
    (service as any).client = {
      generateImagesStream: async (payload: unknown) => (sent.push(payload), upstream()),
      editImagesStream: async (payload: unknown) => (sent.push(payload), upstream()),
    };
    return { service, reserved, settled, sent };
  };
  const of = (...events: Array<Record<string, unknown> | Error>) =>
    async function* () {
      for (const e of events) {
        if (e instanceof Error) throw e;
        yield e;
      }
    };
  /** Takes the events as a relay would, stopping (as a client that left) after `take` of them. */
  const take = async (events: AsyncIterable<Record<string, unknown>>, take = Infinity) => {
    const seen: unknown[] = [];
    for await (const e of events) {
      seen.push(e);
      if (seen.length >= take) break;
    }
    return seen;
  };

  it('passes the upstream events on as they come and charges the completed images when the stream ends', async () => {
    const { service, reserved, settled, sent } = setup(of(partial, completed, completed));
    const stream = await service.stream(principal, input, 'generation', 'req-1');
    expect(reserved).toEqual([{ model: 'img', yuan: 0.2 }]);
    expect(sent).toEqual([{ size: '1024x1024', partial_images: 1, model: 'img', prompt: 'a lighthouse', n: 2 }]);
    expect(await take(stream.events)).toEqual([partial, completed, completed]);
    await stream.settle('ok');
    expect(settled).toEqual([
      expect.objectContaining({
        endpoint: '/v1/vision/generate',
        model: 'img',
        provider: 'images-upstream',
        status: 'ok',
        costYuan: 0.2,
        images: 2,
        httpStatus: 200,
        requestId: 'req-1',
      }),
    ]);
  });

  it('a client that left after one completed image pays the hold; the upstream stream is closed', async () => {
    let closed = false;
    const { service, settled } = setup(async function* () {
      try {
        yield completed;
        yield completed;
      } finally {
        closed = true;
      }
    });
    const stream = await service.stream(principal, input, 'generation');
    await take(stream.events, 1);
    expect(closed).toBe(true);
    await stream.settle('aborted');
    expect(settled).toEqual([expect.objectContaining({ status: 'aborted', costYuan: 0.2, images: 1 })]);
  });

  it('a stream cut after a completed image is recorded as aborted and charged for it; cut before, it is released', async () => {
    const cut = new UpstreamError('stream cut', 'network', 0);
    const after = setup(of(partial, completed, cut));
    const stream = await after.service.stream(principal, input, 'generation');
    await expect(take(stream.events)).rejects.toBe(cut);
    await stream.settle('failed', cut);
    expect(after.settled).toEqual([
      expect.objectContaining({ status: 'aborted', costYuan: 0.1, images: 1, error: 'stream cut' }),
    ]);

    const before = setup(of(partial, cut));
    const early = await before.service.stream(principal, input, 'generation');
    await expect(take(early.events)).rejects.toBe(cut);
    await early.settle('failed', cut);
    expect(before.settled).toEqual([expect.objectContaining({ status: 'failed', costYuan: 0, images: 0 })]);
  });

  it('an edit checks its uploads, sends them as multipart fields and bills like a generation', async () => {
    const { service, settled, sent } = setup(of({ ...completed, type: 'image_edit.completed' }));
    const stream = await service.stream(
      principal,
      { ...input, n: 1, images: [{ buffer: PNG, originalname: 'a.png' }] },
      'edit',
    );
    expect(sent[0]).toMatchObject({
      model: 'img',
      prompt: 'a lighthouse',
      n: 1,
      fields: { size: '1024x1024', partial_images: '1' },
    });
    await take(stream.events);
    await stream.settle('ok');
    expect(settled).toEqual([
      expect.objectContaining({ endpoint: '/v1/images/edits', status: 'ok', costYuan: 0.1, images: 1 }),
    ]);
  });

  it('an upstream refusal before the stream is thrown as a catalog error, settled as failed', async () => {
    const { service, settled } = setup(of());
    (service as any).client.generateImagesStream = async () => {
      throw new UpstreamError('bad prompt', 'http', 400, undefined, { message: 'bad prompt', code: 'invalid_value' });
    };
    const error = await service.stream(principal, input, 'generation').then(
      () => null,
      (e) => e,
    );
    expect(error).toBeInstanceOf(GatewayError);
    expect(settled).toEqual([
      expect.objectContaining({ status: 'failed', costYuan: 0, httpStatus: error.getStatus() }),
    ]);
  });
});

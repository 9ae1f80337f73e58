import sharp from 'sharp';
import { LlmRouter, parseProvidersConfig } from '@app/llm';
import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import type { CallHold, CallOutcome } from '../usage/metering.service';
import { ModerateContentService } from './moderate-content.service';
import { keyPrincipal, modelInfo } from '../../../../test/ai-gateway/use-case-fixtures';
import { MediaUpstream, startMediaUpstream } from '../../../../test/ai-gateway/media/media-upstream';

// The use case with the real router over one deployment on the fake media upstream (which answers one
// result per string, test/ai-gateway/media/media-upstream.ts) and an in-memory ledger: its answer is a value.
describe('ModerateContentService', () => {
  // Priced here (the catalog's default is free) so that billing shows.
  const model = modelInfo({ name: 'omni-moderation-latest', kind: 'moderation', price: 0.01 }) as never;
  let media: MediaUpstream;
  let router: LlmRouter;
  let held: CallHold[];
  let settled: CallOutcome[];
  const service = (
    config: Partial<GatewayConfig> = {},
    opts: { reserve?: () => Promise<unknown>; router?: unknown } = {},
  ) => {
    const metering = {
      reserve: opts.reserve ?? (async (_p: unknown, hold: CallHold) => (held.push(hold), { keyId: 'k1' })),
      settle: async (_r: unknown, outcome: CallOutcome) => void settled.push(outcome),
    };
    const gateway = Object.assign(new GatewayConfig(), config);
    return new ModerateContentService((opts.router ?? router) as LlmRouter, gateway, metering as never);
  };
  const imagePart = (type: string, bytes: Buffer) => ({
    type: 'image_url',
    image_url: { url: `data:image/${type};base64,${bytes.toString('base64')}` },
  });

  beforeAll(async () => {
    media = await startMediaUpstream();
    const providers = {
      // One attempt: a failed call is answered as it failed, not retried on the same deployment.
      routing: { maxAttempts: 1 },
      deployments: [
        {
          name: 'moderator',
          type: 'openai',
          baseUrl: media.url,
          apiKeyEnv: 'MODERATION_KEY',
          models: [{ name: 'omni-moderation-latest', upstream: 'omni-upstream' }],
        },
      ],
    };
    router = new LlmRouter(parseProvidersConfig(providers, { MODERATION_KEY: media.apiKey }));
  });
  afterAll(async () => {
    await router?.close();
    await media?.close();
  });
  beforeEach(() => {
    held = [];
    settled = [];
    media.calls = [];
  });

  it("forwards the inputs under the deployment's model name, answers under the public one, billed per classified input", async () => {
    const answer = await service().moderate(keyPrincipal, ['hello', 'kill it', 'bye'], model, 'req-mod');
    expect(answer).toMatchObject({ id: expect.stringMatching(/^modr-/), model: 'omni-moderation-latest' });
    expect((answer.results as Array<{ flagged: boolean }>).map((r) => r.flagged)).toEqual([false, true, false]);
    expect(media.calls.map((c) => c.json)).toEqual([{ model: 'omni-upstream', input: ['hello', 'kill it', 'bye'] }]);
    expect(held).toEqual([{ model: 'omni-moderation-latest', yuan: 0.03 }]);
    expect(settled).toEqual([
      {
        endpoint: '/v1/moderations',
        model: 'omni-moderation-latest',
        requestId: 'req-mod',
        provider: 'moderator',
        status: 'ok',
        costYuan: 0.03,
        images: 0,
        httpStatus: 200,
      },
    ]);
  });

  it('bills only the inputs the upstream classified, and names an answer without an upstream id by the request', async () => {
    const short = {
      servesMedia: () => true,
      media: async () => ({ value: { results: [{ flagged: false }] }, deployment: 'moderator' }),
    };
    const answer = await service({}, { router: short }).moderate(keyPrincipal, ['a', 'b', 'c'], model, 'req-short');
    expect(answer).toEqual({ id: 'modr-req-short', model: 'omni-moderation-latest', results: [{ flagged: false }] });
    expect(held[0].yuan).toBe(0.03);
    expect(settled[0]).toMatchObject({ status: 'ok', costYuan: 0.01 });
  });

  it('sends an image as a data URL of its checked bytes, typed by what the bytes are rather than by its label', async () => {
    const jpeg = await sharp({ create: { width: 16, height: 12, channels: 3, background: '#c33' } })
      .jpeg()
      .toBuffer();
    await service().moderate(keyPrincipal, [{ type: 'text', text: 'fine?' }, imagePart('png', jpeg)], model);
    expect(media.calls[0].json.input).toEqual([
      { type: 'text', text: 'fine?' },
      { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${jpeg.toString('base64')}` } },
    ]);
    expect(held).toEqual([{ model: 'omni-moderation-latest', yuan: 0.01 }]);
    expect(settled[0]).toMatchObject({ status: 'ok', images: 1 });
  });

  it('refuses a model nothing serves, and answers a refused reservation as it came, before fetching or sending anything', async () => {
    // An image URL that would be refused as private if it were fetched: the order of the checks shows.
    const input = [{ type: 'image_url', image_url: { url: 'http://127.0.0.1:9/secret.png' } }];
    const unserved = modelInfo({ name: 'omni-moderation-2024-09-26', kind: 'moderation', price: 0.01 }) as never;
    await expect(service().moderate(keyPrincipal, input, unserved)).rejects.toMatchObject({
      code: GatewayErrorCode.NoProvider,
      status: 503,
    });
    const refusal = new GatewayError(GatewayErrorCode.InsufficientQuota);
    await expect(
      service({}, { reserve: async () => Promise.reject(refusal) }).moderate(keyPrincipal, input, model),
    ).rejects.toBe(refusal);
    expect([held, settled, media.calls]).toEqual([[], [], []]);
  });

  it('refuses an image over AI_MEDIA_MAX_IMAGE_BYTES with 413, settled as failed at no cost, nothing sent', async () => {
    const png = await sharp({ create: { width: 16, height: 12, channels: 3, background: '#3a7' } })
      .png()
      .toBuffer();
    const error = await service({ AI_MEDIA_MAX_IMAGE_BYTES: png.length - 1 })
      .moderate(keyPrincipal, [imagePart('png', png)], model, 'req-big')
      .catch((e) => e);
    // Named by the part it came from, as every refusal of a moderation image is (vision/image-source.ts).
    expect(error).toMatchObject({ errorCode: 'image_too_large', status: 413, param: 'input.0.image_url.url' });
    expect(media.calls).toEqual([]);
    expect(settled).toEqual([
      expect.objectContaining({ status: 'failed', costYuan: 0, httpStatus: 413, requestId: 'req-big' }),
    ]);
  });

  it("answers an upstream failure as the gateway's 502 naming the deployment, settled as failed on it at no cost", async () => {
    media.failNext = 500;
    const error = await service()
      .moderate(keyPrincipal, 'hello', model, 'req-fail')
      .catch((e) => e);
    expect(error).toMatchObject({ code: GatewayErrorCode.UpstreamFailed, status: 502 });
    expect(error.message).toContain('moderator');
    expect(settled).toEqual([
      expect.objectContaining({
        provider: 'moderator',
        status: 'failed',
        costYuan: 0,
        httpStatus: 502,
        requestId: 'req-fail',
      }),
    ]);
  });
});

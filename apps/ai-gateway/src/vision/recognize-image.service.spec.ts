import { EngineInputError, OcrEngine, VisionEngine } from '@app/engines';
import { renderBlankPng } from '@app/engines/testing/media-fixtures';
import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import type { CallHold, CallOutcome } from '../usage/metering.service';
import { EngineLimits } from './engine-limits';
import { recognitionCost } from './media-prices';
import { RecognizeImageService } from './recognize-image.service';
import { keyPrincipal } from '../../../../test/ai-gateway/use-case-fixtures';

// The use case with in-memory engines and ledger: the real ones load tfjs and ONNX models (seconds), which
// libs/engines/src/vision and libs/engines/src/ocr test on their own and test/ai-gateway/media/vision.e2e-spec.ts
// through HTTP. Here the engines are the process's shared instances replaced for the test.
describe('RecognizeImageService', () => {
  const png = renderBlankPng(32, 24);
  const label = { name: 'person', confidence: 0.9 };
  const line = { content: 'hello', confidence: 0.95, bounding_box: { x: 1, y: 2, width: 30, height: 10 } };
  let held: CallHold[];
  let settled: CallOutcome[];
  let detect: jest.Mock;
  let read: jest.Mock;
  const service = (config: Partial<GatewayConfig> = {}, reserve?: () => Promise<unknown>) => {
    const gateway = Object.assign(new GatewayConfig(), { AI_MEDIA_MAX_PIXELS: 1_000_000, ...config });
    const metering = {
      reserve: reserve ?? (async (_p: unknown, hold: CallHold) => (held.push(hold), { keyId: 'k1' })),
      settle: async (_r: unknown, outcome: CallOutcome) => void settled.push(outcome),
    };
    return new RecognizeImageService(gateway, metering as never, new EngineLimits(gateway));
  };
  const request = (features: string[], extra: object = {}) =>
    ({ image: png.toString('base64'), features, ...extra }) as never;

  beforeEach(() => {
    held = [];
    settled = [];
    detect = jest.fn(async (_image: Buffer, o: { labels: boolean }) => (o.labels ? { labels: [label] } : {}));
    read = jest.fn(async () => [line]);
    jest.spyOn(VisionEngine, 'shared').mockReturnValue({ detect } as never);
    jest.spyOn(OcrEngine, 'shared').mockReturnValue({ recognize: read } as never);
  });
  afterEach(() => jest.restoreAllMocks());

  it('runs each engine once for the features asked, answers their results and bills each distinct feature once', async () => {
    const answer = await service().recognize(
      keyPrincipal,
      request(['labels', 'text', 'labels'], { language: 'en' }),
      'req-v',
    );
    expect(answer).toEqual({ labels: [label], text: [line] });
    expect(detect).toHaveBeenCalledTimes(1);
    const [image, options] = detect.mock.calls[0];
    expect(image.equals(png)).toBe(true);
    expect(options).toMatchObject({ labels: true, faces: false, objects: false, maxPixels: 1_000_000, key: 'k1' });
    expect(read.mock.calls).toEqual([
      [expect.any(Buffer), 1_000_000, undefined, { key: 'k1', signal: expect.any(AbortSignal) }],
    ]);
    const cost = recognitionCost(['labels', 'text']);
    expect(held).toEqual([{ model: 'local-vision', yuan: cost }]);
    expect(settled).toEqual([
      {
        endpoint: '/v1/vision/recognize',
        model: 'local-vision',
        provider: 'local',
        requestId: 'req-v',
        status: 'ok',
        costYuan: cost,
        httpStatus: 200,
      },
    ]);
  });

  it('runs no vision engine for text alone and no OCR without text', async () => {
    expect(await service().recognize(keyPrincipal, request(['text']))).toEqual({ text: [line] });
    expect(detect).not.toHaveBeenCalled();
    expect(await service().recognize(keyPrincipal, request(['faces', 'objects']))).toEqual({});
    expect(detect.mock.calls[0][1]).toMatchObject({ faces: true, objects: true, labels: false });
    expect(read).toHaveBeenCalledTimes(1);
  });

  it('refuses a language OCR cannot read only when text is asked, before anything is reserved', async () => {
    await expect(
      service().recognize(keyPrincipal, request(['labels', 'text'], { language: 'ja' })),
    ).rejects.toMatchObject({
      code: GatewayErrorCode.UnsupportedLanguage,
      param: 'language',
    });
    expect(held).toEqual([]);
    expect(await service().recognize(keyPrincipal, request(['labels'], { language: 'ja' }))).toEqual({
      labels: [label],
    });
  });

  it('refuses when local engines are off, and answers a refused reservation as it came, running no engine', async () => {
    await expect(
      service({ AI_LOCAL_ENGINES: false }).recognize(keyPrincipal, request(['labels'])),
    ).rejects.toMatchObject({ code: GatewayErrorCode.LocalEnginesDisabled });
    const refusal = new GatewayError(GatewayErrorCode.InsufficientQuota);
    const poor = service({}, async () => Promise.reject(refusal));
    await expect(poor.recognize(keyPrincipal, request(['labels']))).rejects.toBe(refusal);
    expect([held, settled, detect.mock.calls, read.mock.calls]).toEqual([[], [], [], []]);
  });

  it('refuses an image over AI_MEDIA_MAX_IMAGE_BYTES with 413, settled as failed at no cost, no engine run', async () => {
    const error = await service({ AI_MEDIA_MAX_IMAGE_BYTES: png.length - 1 })
      .recognize(keyPrincipal, request(['labels']), 'req-big')
      .catch((e) => e);
    expect(error).toMatchObject({ code: GatewayErrorCode.ImageTooLarge, status: 413 });
    expect(detect).not.toHaveBeenCalled();
    expect(settled).toEqual([
      expect.objectContaining({ status: 'failed', costYuan: 0, httpStatus: 413, requestId: 'req-big' }),
    ]);
  });

  it("answers an engine's refusal of the bytes as 415 naming the image, settled as failed", async () => {
    read.mockRejectedValueOnce(new EngineInputError('unsupported image format'));
    const error = await service()
      .recognize(keyPrincipal, request(['text']))
      .catch((e) => e);
    expect(error).toMatchObject({ code: GatewayErrorCode.UnsupportedMediaType, status: 415, param: 'image' });
    expect(settled).toEqual([
      expect.objectContaining({ status: 'failed', costYuan: 0, httpStatus: 415, error: 'unsupported image format' }),
    ]);
  });

  it('stops the other engine when one fails: the OCR of an image whose vision failed is aborted', async () => {
    let ocrSignal: AbortSignal | undefined;
    read.mockImplementation(async (_i: Buffer, _m: number, _c: unknown, call: { signal: AbortSignal }) => {
      ocrSignal = call.signal;
      return new Promise((_resolve, reject) =>
        call.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
      );
    });
    detect.mockRejectedValueOnce(new EngineInputError('unsupported image format'));
    const error = await service()
      .recognize(keyPrincipal, request(['labels', 'text'], { language: 'en' }))
      .catch((e) => e);
    expect(error).toMatchObject({ code: GatewayErrorCode.UnsupportedMediaType });
    expect(ocrSignal?.aborted).toBe(true);
    // The client's own signal still reaches the engines.
    const client = new AbortController();
    read.mockImplementation(async (_i: Buffer, _m: number, _c: unknown, call: { signal: AbortSignal }) => {
      client.abort();
      return call.signal.aborted ? [] : [line];
    });
    await service().recognize(keyPrincipal, request(['text'], { language: 'en' }), 'req-c', client.signal);
    expect(read.mock.calls.at(-1)?.[3].signal.aborted).toBe(true);
  });
});

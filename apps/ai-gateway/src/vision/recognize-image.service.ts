import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { isOcrLanguage, OCR_LANGUAGES, OcrEngine, VisionEngine } from '@app/engines';
import { GatewayConfig } from '../config/gateway.config';
import { MeteringService } from '../usage/metering.service';
import { RecognizeImageRequest, RecognizeImageResponse } from './dtos/recognize-image.dto';
import { allowedFetchCidrs, loadImageSource } from './image-source';
import { EngineLimits } from './engine-limits';
import { toMediaError } from './media-errors';
import { recognitionCost } from './media-prices';

/** Labels, objects, faces and text of one image, from the in-process engines. */
@Injectable()
export class RecognizeImageService {
  constructor(
    private readonly config: GatewayConfig,
    private readonly metering: MeteringService,
    // Injected so the AI_ENGINE_* caps are applied before the first engine call.
    readonly limits: EngineLimits,
  ) {}

  /** `signal` aborts when the client leaves: the download and the engine work for it stop. */
  async recognize(
    principal: Principal,
    input: RecognizeImageRequest,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<RecognizeImageResponse> {
    const features = [...new Set(input.features)];
    const language = input.language ?? 'zh-CN';
    if (features.includes('text') && !isOcrLanguage(language)) {
      throw new GatewayError(GatewayErrorCode.UnsupportedLanguage, { language, supported: OCR_LANGUAGES });
    }
    if (!this.config.AI_LOCAL_ENGINES)
      throw new GatewayError(GatewayErrorCode.LocalEnginesDisabled, { feature: 'Image recognition' });

    const cost = recognitionCost(features);
    const reservation = await this.metering.reserve(principal, { model: 'local-vision', yuan: cost });
    const outcome = { endpoint: '/v1/vision/recognize', model: 'local-vision', provider: 'local', requestId };
    try {
      const image = await loadImageSource(input.image, {
        maxBytes: this.config.AI_MEDIA_MAX_IMAGE_BYTES,
        timeoutMs: this.config.AI_MEDIA_FETCH_TIMEOUT_MS,
        maxRedirects: this.config.AI_MEDIA_FETCH_MAX_REDIRECTS,
        allowedCidrs: allowedFetchCidrs(this.config),
        signal,
      });
      // Engine work counts against this key's share of the shared engine limiter. Vision and OCR run side
      // by side; when one fails the answer is that failure, so the other stops too (within an OCR slice).
      const oneFailed = new AbortController();
      const call = {
        key: principal.id,
        signal: signal ? AbortSignal.any([signal, oneFailed.signal]) : oneFailed.signal,
      };
      const stopOthersOnFailure = <T>(work: Promise<T>): Promise<T> =>
        work.catch((e: unknown) => {
          oneFailed.abort();
          throw e;
        });
      const maxPixels = this.config.AI_MEDIA_MAX_PIXELS;
      const wantVision = features.some((f) => f !== 'text');
      const [vision, text] = await Promise.all([
        stopOthersOnFailure(
          wantVision
            ? VisionEngine.shared().detect(image, {
                faces: features.includes('faces'),
                objects: features.includes('objects'),
                labels: features.includes('labels'),
                maxPixels,
                ...call,
              })
            : Promise.resolve({}),
        ),
        stopOthersOnFailure(
          features.includes('text')
            ? OcrEngine.shared().recognize(image, maxPixels, undefined, call)
            : Promise.resolve(undefined),
        ),
      ]);
      const response: RecognizeImageResponse = { ...vision };
      if (text) response.text = text;
      await this.metering.settle(reservation, { ...outcome, status: 'ok', costYuan: cost, httpStatus: 200 });
      return response;
    } catch (e) {
      const error = toMediaError(e, 'image');
      await this.metering.settle(reservation, {
        ...outcome,
        status: 'failed',
        costYuan: 0,
        httpStatus: (error as GatewayError).getStatus?.() ?? 500,
        error: (e as Error).message,
      });
      throw error;
    }
  }
}

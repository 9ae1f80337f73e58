import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { inspectImage } from '@app/engines';
import { Deployment, LlmRouter, MediaModelInfo, OpenAiMediaClient } from '@app/llm';
import { GatewayConfig } from '../config/gateway.config';
import { MeteringService } from '../usage/metering.service';
import { roundYuan } from '../usage/pricing';
import { failedDeployment } from '../upstreams/upstream-errors';
import { allowedFetchCidrs, loadImageSource } from './image-source';
import { toMediaError } from './media-errors';
import { ModerationPart, parseModerationInput } from './moderation-input';

/** What OpenAI's moderation models take (the spec: PNG, JPEG, WebP, non-animated GIF); other raster formats are refused here, not by the upstream. */
const IMAGE_TYPES: Record<string, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
};

/**
 * `/v1/moderations`, forwarded to the providers file's OpenAI-type deployments that list the model.
 * Priced per classified input (the model's `price` in the media catalog, one per result). Image parts
 * are fetched by the gateway through loadImageSource (public addresses only, every redirect re-checked,
 * AI_MEDIA_MAX_IMAGE_BYTES) and their header checked (raster formats, AI_MEDIA_MAX_PIXELS) before the
 * bytes go upstream as a data URL: the upstream never fetches a URL the caller chose.
 */
@Injectable()
export class ModerateContentService {
  private readonly clients = new Map<string, OpenAiMediaClient>();

  constructor(
    private readonly router: LlmRouter,
    private readonly config: GatewayConfig,
    private readonly metering: MeteringService,
  ) {}

  async moderate(
    principal: Principal,
    input: unknown,
    model: MediaModelInfo,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const parsed = parseModerationInput(input);
    // Whether anything serves the model and whether the key can pay are asked before any image is
    // fetched: a refused call costs the gateway no downloads.
    if (!this.router.servesMedia(model.name))
      throw new GatewayError(GatewayErrorCode.NoProvider, { model: model.name });
    const reservation = await this.metering.reserve(principal, { model: model.name, yuan: model.price * parsed.count });
    const outcome = { endpoint: '/v1/moderations', model: model.name, requestId };
    try {
      if (parsed.images.length)
        parsed.value = await this.inlineImages(parsed.value as ModerationPart[], parsed.images, signal);
      const routed = await this.router.media(model.name, { signal, key: reservation.share }, (d, upstreamModel) =>
        this.client(d).moderate({ input: parsed.value, model: upstreamModel }, signal),
      );
      // Billed for what was classified: never more results than inputs sent.
      const classified = Math.min(parsed.count, routed.value.results.length);
      await this.metering.settle(reservation, {
        ...outcome,
        provider: routed.deployment,
        status: 'ok',
        costYuan: roundYuan(model.price * classified),
        images: parsed.images.length,
        httpStatus: 200,
      });
      return {
        id: typeof routed.value.id === 'string' ? routed.value.id : `modr-${requestId ?? Date.now()}`,
        model: model.name,
        results: routed.value.results,
      };
    } catch (e) {
      const error = toMediaError(e, 'input');
      await this.metering.settle(reservation, {
        ...outcome,
        provider: failedDeployment(e),
        status: 'failed',
        costYuan: 0,
        httpStatus: (error as GatewayError).getStatus?.() ?? 500,
        error: (e as Error).message,
      });
      throw error;
    }
  }

  private client(d: Deployment): OpenAiMediaClient {
    let client = this.clients.get(d.name);
    if (!client) {
      client = new OpenAiMediaClient({
        baseUrl: d.baseUrl!,
        apiKey: d.apiKey,
        headers: d.headers,
        timeoutMs: d.timeoutMs,
      });
      this.clients.set(d.name, client);
    }
    return client;
  }

  /**
   * The image parts as checked data URLs. All images of one call together are at most
   * AI_MEDIA_MAX_IMAGE_BYTES: each fetch is bounded by what the earlier ones left, so one request holds at
   * most that many bytes (and their base64) however many parts it names.
   */
  private async inlineImages(
    parts: ModerationPart[],
    indexes: number[],
    signal?: AbortSignal,
  ): Promise<ModerationPart[]> {
    const out = [...parts];
    const total = this.config.AI_MEDIA_MAX_IMAGE_BYTES;
    let left = total;
    for (const i of indexes) {
      const part = parts[i] as Extract<ModerationPart, { type: 'image_url' }>;
      if (left <= 0)
        throw new GatewayError(GatewayErrorCode.UploadTooLarge, {
          maxBytes: total,
          setting: 'AI_MEDIA_MAX_IMAGE_BYTES for all images of one input',
          param: `input.${i}.image_url.url`,
        });
      try {
        const bytes = await loadImageSource(part.image_url.url, {
          maxBytes: left,
          timeoutMs: this.config.AI_MEDIA_FETCH_TIMEOUT_MS,
          maxRedirects: this.config.AI_MEDIA_FETCH_MAX_REDIRECTS,
          allowedCidrs: allowedFetchCidrs(this.config),
          signal,
          param: `input.${i}.image_url.url`,
        });
        const info = await inspectImage(bytes, this.config.AI_MEDIA_MAX_PIXELS);
        if (!IMAGE_TYPES[info.format] || (info.format === 'gif' && info.frames > 1)) {
          const what = info.format === 'gif' ? 'an animated GIF' : info.format;
          throw new GatewayError(GatewayErrorCode.UnsupportedMediaType, {
            message: `image ${what} is not accepted: moderations take PNG, JPEG, WebP or a non-animated GIF`,
            param: `input.${i}.image_url.url`,
          });
        }
        left -= bytes.length;
        out[i] = {
          type: 'image_url',
          image_url: { url: `data:${IMAGE_TYPES[info.format]};base64,${bytes.toString('base64')}` },
        };
      } catch (e) {
        // Past what the earlier images left: the total is the limit that was hit, not one image's size.
        if (e instanceof GatewayError && e.code === GatewayErrorCode.ImageTooLarge && left < total) {
          throw new GatewayError(GatewayErrorCode.UploadTooLarge, {
            maxBytes: total,
            setting: 'AI_MEDIA_MAX_IMAGE_BYTES for all images of one input',
            param: `input.${i}.image_url.url`,
          });
        }
        throw toMediaError(e, `input.${i}.image_url.url`);
      }
    }
    return out;
  }
}

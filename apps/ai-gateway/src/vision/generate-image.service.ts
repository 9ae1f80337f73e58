import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'crypto';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '@app/envelope';
import { imagePricePer1024, UpstreamError } from '@app/llm';
import { OpenAiMediaClient } from '@app/llm';
import type { ObjectStorage } from '@app/storage';
import { GatewayConfig } from '../config/gateway.config';
import { MeteringService } from '../usage/metering.service';
import { GenerateImageResponse } from './dtos/generate-image.dto';
import { loadImageSource } from './image-source';
import { toMediaError } from './media-errors';
import { AUTO_SIZE_BOUND, imageGenerationCost } from './media-prices';
import { roundYuan } from '../usage/pricing';
import type { ImageModelField, MediaModelInfo } from '@app/llm';
import { CONTENT_TYPES, MEDIA_STORAGE } from './media-storage';

export interface ImageGenerationInput {
  prompt: string;
  size: string;
  n: number;
  style?: string;
  /** The caller's model from the media catalog (upstream name, price, accepted fields); default AI_IMAGES_MODEL. */
  model?: MediaModelInfo;
  /** The model's optional fields as the caller gave them (quality, background, output_format, ...), passed upstream. */
  extra?: Partial<Record<ImageModelField, unknown>>;
}

export interface StoredGeneratedImage {
  key: string;
  bytes: Buffer;
  revisedPrompt: string;
}

const STYLE_HINTS: Record<string, string> = {
  realistic: 'photorealistic, natural lighting',
  artistic: 'artistic illustration, painterly',
  anime: 'anime style illustration',
};

/** Images from the OpenAI-compatible upstream, stored (local disk or S3) and served under {cdn_url}. */
@Injectable()
export class GenerateImageService {
  private client: OpenAiMediaClient | null = null;

  constructor(
    private readonly config: GatewayConfig,
    private readonly metering: MeteringService,
    @Inject(MEDIA_STORAGE) private readonly storage: ObjectStorage,
  ) {
    if (config.AI_IMAGES_BASE_URL) {
      this.client = new OpenAiMediaClient({
        baseUrl: config.AI_IMAGES_BASE_URL,
        apiKey: config.AI_IMAGES_API_KEY,
        timeoutMs: config.AI_MEDIA_UPSTREAM_TIMEOUT_MS,
        // Image URLs in the upstream's answer go through the same SSRF guard as caller-given URLs.
        downloadImage: (url, signal) => downloadGeneratedImage(url, config, signal),
      });
    }
  }

  async generate(principal: Principal, input: ImageGenerationInput, requestId?: string, signal?: AbortSignal): Promise<StoredGeneratedImage[]> {
    if (!this.client) throw new GatewayError(GatewayErrorCode.ImageGenerationUnconfigured);
    const extra = Object.fromEntries(Object.entries(input.extra ?? {}).filter(([, v]) => v !== undefined));
    const fields = input.model?.fields;
    // A field the model does not take is refused, not dropped (its meaning would be lost silently).
    for (const name of Object.keys(extra)) {
      if (fields && !fields.includes(name as ImageModelField)) {
        throw new GatewayError(GatewayErrorCode.ImageParameterUnsupported, { name, model: input.model!.name });
      }
    }
    // Priced by the quality asked for where the model's catalog entry says so (qualityPrices).
    const per1024 = input.model ? imagePricePer1024(input.model, extra.quality) : undefined;
    const reservation = await this.metering.reserve(principal, imageGenerationCost(input.size, input.n, per1024));
    const upstreamModel = input.model?.upstream ?? this.config.AI_IMAGES_MODEL;
    const outcome = { endpoint: '/v1/vision/generate', model: input.model?.name ?? upstreamModel, provider: 'images-upstream', requestId };
    try {
      const hint = input.style ? STYLE_HINTS[input.style] : undefined;
      const prompt = hint ? `${input.prompt}\n\nStyle: ${hint}.` : input.prompt;
      const images = await this.client.generateImages({ model: upstreamModel, prompt, n: input.n, size: input.size, extra, responseFormat: input.model?.responseFormat }, signal);
      const day = new Date().toISOString().slice(0, 10).replace(/-/g, '/');
      const stored: StoredGeneratedImage[] = [];
      let cost = 0;
      for (const image of images) {
        // b64_json carries no type: jpeg and webp (gpt-image-1 output_format) are told by their bytes.
        image.contentType = sniffImageType(image.bytes);
        cost += input.size === 'auto' ? await answeredSizeCost(image.bytes, per1024) : imageGenerationCost(input.size, 1, per1024);
        const ext = Object.entries(CONTENT_TYPES).find(([, type]) => type === image.contentType)?.[0] ?? 'png';
        const key = `images/${day}/${randomUUID()}.${ext}`;
        await this.storage.put(key, image.bytes, CONTENT_TYPES[ext]);
        stored.push({ key, bytes: image.bytes, revisedPrompt: image.revisedPrompt ?? input.prompt });
      }
      await this.metering.settle(reservation, { ...outcome, status: 'ok', costYuan: roundYuan(cost), images: stored.length, httpStatus: 200 });
      return stored;
    } catch (e) {
      const error = toMediaError(e, 'prompt');
      await this.metering.settle(reservation, { ...outcome, status: 'failed', costYuan: 0, httpStatus: (error as GatewayError).getStatus?.() ?? 500, error: (e as Error).message });
      throw error;
    }
  }

  static response(images: StoredGeneratedImage[], cdn: string): GenerateImageResponse {
    return { images: images.map((i) => ({ url: `${cdn}/${i.key}`, revised_prompt: i.revisedPrompt })) };
  }
}

/** Generated images are at most this large (a 1792x1024 PNG is a few MB). */
const MAX_GENERATED_IMAGE_BYTES = 32 * 1024 * 1024;

/**
 * Downloads an image URL from the images upstream's answer through loadImageSource: public
 * addresses only (AI_MEDIA_FETCH_ALLOWED_CIDRS exempts a local upstream), every hop re-checked,
 * size and time capped. The type comes from the bytes, not from a header.
 */
export async function downloadGeneratedImage(url: string, config: GatewayConfig, signal?: AbortSignal): Promise<{ bytes: Buffer; contentType: string }> {
  if (!/^https?:\/\//i.test(url)) throw new UpstreamError('image upstream answered a URL that is not http(s)', 'protocol', 200);
  let bytes: Buffer;
  try {
    bytes = await loadImageSource(url, {
      maxBytes: MAX_GENERATED_IMAGE_BYTES,
      timeoutMs: config.AI_MEDIA_UPSTREAM_TIMEOUT_MS,
      maxRedirects: config.AI_MEDIA_FETCH_MAX_REDIRECTS,
      allowedCidrs: (config.AI_MEDIA_FETCH_ALLOWED_CIDRS ?? '').split(',').map((s) => s.trim()).filter(Boolean),
      signal,
    });
  } catch (e) {
    // The caller did not choose this URL: an upstream fault (502), without the fetch details.
    throw new UpstreamError(e instanceof GatewayError && e.code === GatewayErrorCode.ImageUrlForbidden ? 'image upstream answered a URL on a non-public address' : 'generated image could not be downloaded', 'protocol', 200);
  }
  return { bytes, contentType: sniffImageType(bytes) };
}

/**
 * `size: "auto"`: the image is billed by the size the upstream answered (read from its header by sharp),
 * never above the AUTO_SIZE_BOUND the call was reserved at; unreadable: billed at that bound.
 */
async function answeredSizeCost(bytes: Buffer, per1024: number | undefined): Promise<number> {
  const bound = imageGenerationCost(AUTO_SIZE_BOUND, 1, per1024);
  try {
    const { default: sharp } = await import('sharp');
    const { width, height } = await sharp(bytes).metadata();
    if (!width || !height) return bound;
    return Math.min(bound, imageGenerationCost(`${width}x${height}`, 1, per1024));
  } catch {
    return bound;
  }
}

function sniffImageType(b: Buffer): string {
  if (b[0] === 0xff && b[1] === 0xd8) return 'image/jpeg';
  if (b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  if (b.toString('latin1', 0, 4) === 'GIF8') return 'image/gif';
  return 'image/png';
}

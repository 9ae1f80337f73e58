import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'crypto';
import type { Principal } from '@app/auth';
import { OpenAiError } from '@app/envelope';
import { OpenAiMediaClient } from '@app/providers/media';
import type { ObjectStorage } from '@app/providers/storage';
import { GatewayConfig } from '../config/gateway.config';
import { MeteringService } from '../usage/metering.service';
import { GenerateImageResponse } from './dtos/generate-image.dto';
import { serviceUnavailable, toMediaError } from './media-errors';
import { imageGenerationCost } from './media-prices';
import { CONTENT_TYPES, MEDIA_STORAGE } from './media-storage';

export interface ImageGenerationInput {
  prompt: string;
  size: string;
  n: number;
  style?: string;
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
      this.client = new OpenAiMediaClient({ baseUrl: config.AI_IMAGES_BASE_URL, apiKey: config.AI_IMAGES_API_KEY, timeoutMs: config.AI_MEDIA_UPSTREAM_TIMEOUT_MS });
    }
  }

  async generate(principal: Principal, input: ImageGenerationInput, requestId?: string): Promise<StoredGeneratedImage[]> {
    if (!this.client) throw serviceUnavailable('Image generation has no upstream: set AI_IMAGES_BASE_URL to an OpenAI-compatible images API');
    const reservation = await this.metering.reserve(principal, imageGenerationCost(input.size, input.n));
    const outcome = { endpoint: '/v1/vision/generate', model: this.config.AI_IMAGES_MODEL, provider: 'images-upstream', requestId };
    try {
      const hint = input.style ? STYLE_HINTS[input.style] : undefined;
      const prompt = hint ? `${input.prompt}\n\nStyle: ${hint}.` : input.prompt;
      const images = await this.client.generateImages({ model: this.config.AI_IMAGES_MODEL, prompt, n: input.n, size: input.size });
      const day = new Date().toISOString().slice(0, 10).replace(/-/g, '/');
      const stored: StoredGeneratedImage[] = [];
      for (const image of images) {
        const ext = Object.entries(CONTENT_TYPES).find(([, type]) => type === image.contentType)?.[0] ?? 'png';
        const key = `images/${day}/${randomUUID()}.${ext}`;
        await this.storage.put(key, image.bytes, CONTENT_TYPES[ext]);
        stored.push({ key, bytes: image.bytes, revisedPrompt: image.revisedPrompt ?? input.prompt });
      }
      await this.metering.settle(reservation, { ...outcome, status: 'ok', costYuan: imageGenerationCost(input.size, stored.length), images: stored.length, httpStatus: 200 });
      return stored;
    } catch (e) {
      const error = toMediaError(e, 'prompt');
      await this.metering.settle(reservation, { ...outcome, status: 'failed', costYuan: 0, httpStatus: (error as OpenAiError).getStatus?.() ?? 500, error: (e as Error).message });
      throw error;
    }
  }

  static response(images: StoredGeneratedImage[], cdn: string): GenerateImageResponse {
    return { images: images.map((i) => ({ url: `${cdn}/${i.key}`, revised_prompt: i.revisedPrompt })) };
  }
}

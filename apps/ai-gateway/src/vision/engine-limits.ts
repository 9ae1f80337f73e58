import { Injectable } from '@nestjs/common';
import { EngineLimiter } from '@app/engines';
import { GatewayConfig } from '../config/gateway.config';

/**
 * Applies the AI_ENGINE_* caps to the process's one EngineLimiter, which every local engine
 * (ffmpeg, PocketSphinx, OCR, vision, TTS, local embeddings, image decoding) passes through.
 * Provided by the speech and vision modules; configuring twice with the same values is harmless.
 */
@Injectable()
export class EngineLimits {
  readonly limiter = EngineLimiter.shared();

  constructor(config: GatewayConfig) {
    this.limiter.configure({
      ...(config.AI_ENGINE_MAX_CONCURRENT ? { maxConcurrent: config.AI_ENGINE_MAX_CONCURRENT } : {}),
      maxConcurrentPerKey: config.AI_ENGINE_MAX_CONCURRENT_PER_KEY,
      maxQueued: config.AI_ENGINE_MAX_QUEUED,
      maxQueuedPerKey: config.AI_ENGINE_MAX_QUEUED_PER_KEY,
    });
  }
}

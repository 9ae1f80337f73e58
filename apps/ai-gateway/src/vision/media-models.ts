import { Injectable } from '@nestjs/common';
import { GatewayError, GatewayErrorCode } from '../errors';
import {
  catalogEntry,
  DEFAULT_MEDIA_MODELS,
  DEFAULT_MODERATION_MODEL,
  IMAGE_MODEL_FIELDS,
  LlmRouter,
  MediaModelInfo,
  MediaModelKind,
} from '@app/llm';
import { GatewayConfig } from '../config/gateway.config';

/**
 * The client's `model` on the media aliases (/v1/audio/transcriptions and translations, /v1/images/generations
 * and edits, /v1/moderations), looked
 * up in the media catalog (DEFAULT_MEDIA_MODELS with the providers file's `mediaModels:`) the way chat
 * models are: its upstream name and price. No `model`: the configured default (AI_TRANSCRIBE_MODEL /
 * AI_IMAGES_MODEL), which may be a name outside the catalog (sent as it is, contract price, every
 * field passed on). An unknown name is a 404 `model_not_found`, a model of the other kind a 400.
 */
@Injectable()
export class MediaModels {
  constructor(
    private readonly router: LlmRouter,
    private readonly config: GatewayConfig,
  ) {}

  private get catalog(): Record<string, MediaModelInfo> {
    return this.router.config.mediaModels ?? DEFAULT_MEDIA_MODELS;
  }

  resolve(kind: MediaModelKind, requested?: string): MediaModelInfo {
    const name =
      requested ??
      (kind === 'transcription'
        ? this.config.AI_TRANSCRIBE_MODEL
        : kind === 'moderation'
          ? DEFAULT_MODERATION_MODEL
          : this.config.AI_IMAGES_MODEL);
    // Own entries only: `constructor` or `__proto__` is an unknown model (404), not Object's member (it was a 400 "not an image model").
    const info = catalogEntry(this.catalog, name);
    if (info?.kind === kind) return info;
    if (requested === undefined && kind !== 'moderation') {
      return {
        name,
        kind,
        upstream: name,
        price: kind === 'image' ? 0.1 : 0.02,
        fields: kind === 'image' ? [...IMAGE_MODEL_FIELDS] : [],
        responseFormat: kind === 'image',
        ownedBy: 'gateway',
      };
    }
    if (info) throw new GatewayError(GatewayErrorCode.ModelKindMismatch, { model: name, expected: kind });
    throw new GatewayError(GatewayErrorCode.ModelNotFound, { model: name });
  }
}

import { GatewayError, GatewayErrorCode } from '../errors';
import type { ModelInfo } from '@app/llm';

/** What a chat request asks for that is priced apart from text tokens (ModelPrice in libs/llm/src/catalog.ts). */
export interface PricedFeatures {
  /** `modalities` contains `audio` (or `audio` parameters are sent): completion tokens may be audio tokens. */
  audioOutput: boolean;
  /** `web_search_options` is sent: one search call, billed `webSearchPerCall`. */
  webSearch: boolean;
  /** A message has an `input_audio` part: prompt tokens may be audio tokens, billed `audioInputPer1k`. */
  audioInput: boolean;
}

const isSet = (v: unknown) => v !== undefined && v !== null;

type PricedBody = { modalities?: unknown; audio?: unknown; web_search_options?: unknown; messages?: unknown };

const hasAudioPart = (messages: unknown): boolean =>
  Array.isArray(messages) &&
  messages.some(
    (m) =>
      Array.isArray((m as { content?: unknown })?.content) &&
      (m as { content: unknown[] }).content.some((p) => (p as { type?: unknown })?.type === 'input_audio'),
  );

export function pricedFeatures(body: PricedBody): PricedFeatures {
  return {
    audioOutput: (Array.isArray(body.modalities) && body.modalities.includes('audio')) || isSet(body.audio),
    webSearch: isSet(body.web_search_options),
    audioInput: hasAudioPart(body.messages),
  };
}

/**
 * Refuses (400, `param` set) a feature the model's providers-file price does not cover: forwarded
 * unpriced, web search fees and audio tokens would cost the upstream account more than the gateway
 * reserved and bills.
 */
export function assertPriced(body: PricedBody, info: ModelInfo): PricedFeatures {
  const features = pricedFeatures(body);
  const where = `models.${info.name}.price`;
  if (features.webSearch && info.price.webSearchPerCall === undefined) {
    throw new GatewayError(GatewayErrorCode.UnsupportedParameter, {
      param: 'web_search_options',
      message: `web_search_options: web search is billed per call upstream and ${info.name} has no price for it; the operator must declare ${where}.webSearchPerCall in the providers file`,
    });
  }
  if (features.audioOutput && info.price.audioOutputPer1k === undefined) {
    const param = Array.isArray(body.modalities) && body.modalities.includes('audio') ? 'modalities' : 'audio';
    throw new GatewayError(GatewayErrorCode.UnsupportedParameter, {
      param,
      message: `${param}: audio output is billed at audio token prices upstream and ${info.name} has no price for it; the operator must declare ${where}.audioOutputPer1k in the providers file (or use modalities ["text"])`,
    });
  }
  return features;
}

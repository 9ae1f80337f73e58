import { GatewayError, GatewayErrorCode } from '../errors';

/** At most this many strings in one call (each is classified and billed on its own). */
export const MAX_MODERATION_INPUTS = 1000;
/** At most this many image_url parts in one multimodal input (each is fetched and checked). */
export const MAX_MODERATION_IMAGES = 8;

export type ModerationPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export interface ModerationInput {
  /** The input as it goes upstream (image URLs replaced by data URLs once fetched). */
  value: string | string[] | ModerationPart[];
  /** Results the upstream answers: one per string, one for a multimodal array. */
  count: number;
  /** Indexes of image_url parts in `value` (multimodal input). */
  images: number[];
}

const bad = (message: string, param: string) => new GatewayError(GatewayErrorCode.InvalidValue, { message, param });

/**
 * `input` of /v1/moderations as the spec allows it: a string, an array of strings, or an array of
 * `{type:'text',text}` and `{type:'image_url',image_url:{url}}` parts. Image URLs must be http(s) or
 * data:image/ (as chat's image parts, apps/ai-gateway/src/chat/chat-shape.ts); whatever else is a 400 naming the path.
 */
export function parseModerationInput(input: unknown): ModerationInput {
  if (typeof input === 'string') return { value: input, count: 1, images: [] };
  if (!Array.isArray(input) || input.length === 0)
    throw bad('input must be a string, an array of strings, or an array of text and image_url parts', 'input');
  if (input.every((i) => typeof i === 'string')) {
    if (input.length > MAX_MODERATION_INPUTS)
      throw bad(`input may hold at most ${MAX_MODERATION_INPUTS} strings`, 'input');
    return { value: input, count: input.length, images: [] };
  }
  const parts: ModerationPart[] = [];
  const images: number[] = [];
  input.forEach((part: unknown, i) => {
    const param = `input.${i}`;
    if (typeof part !== 'object' || part === null || Array.isArray(part))
      throw bad(
        'each part must be an object {type:"text",text} or {type:"image_url",image_url:{url}} (strings and parts cannot be mixed)',
        param,
      );
    const o = part as Record<string, unknown>;
    if (o.type === 'text') {
      if (typeof o.text !== 'string') throw bad('text must be a string', `${param}.text`);
      parts.push({ type: 'text', text: o.text });
      return;
    }
    if (o.type === 'image_url') {
      const img = o.image_url as Record<string, unknown> | undefined;
      if (typeof img !== 'object' || img === null || typeof img.url !== 'string' || img.url === '')
        throw bad('image_url.url must be a non-empty string', `${param}.image_url.url`);
      if (!/^(https?:\/\/|data:image\/)/i.test(img.url.trim()))
        throw bad('image_url.url must be an http(s) URL or a data:image/... URL', `${param}.image_url.url`);
      images.push(parts.length);
      parts.push({ type: 'image_url', image_url: { url: img.url.trim() } });
      return;
    }
    throw bad('type must be text or image_url', `${param}.type`);
  });
  if (images.length > MAX_MODERATION_IMAGES)
    throw bad(`input may hold at most ${MAX_MODERATION_IMAGES} image_url parts`, 'input');
  return { value: parts, count: 1, images };
}

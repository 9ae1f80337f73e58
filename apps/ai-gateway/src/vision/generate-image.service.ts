import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { imageEditInputPrice, imagePricePer1024, UpstreamError } from '@app/llm';
import { ImageEditRequest, OpenAiMediaClient } from '@app/llm';
import { ImageInfo, inspectImage } from '@app/engines';
import { MAX_EDIT_IMAGES } from './dtos/generate-image.dto';
import type { MediaEventStream } from './media-event-stream';
import { shareOf } from '../keys/key-scopes';
import { Tokenizer } from '../tokenizer/tokenizer';
import { GatewayConfig } from '../config/gateway.config';
import { MeteringService } from '../usage/metering.service';
import { GenerateImageResponse } from './dtos/generate-image.dto';
import { allowedFetchCidrs, loadImageSource } from './image-source';
import { toMediaError } from './media-errors';
import { AUTO_SIZE_BOUND, imageGenerationCost } from './media-prices';
import { roundYuan } from '../usage/pricing';
import type { ImageModelField, MediaModelInfo } from '@app/llm';
import { GeneratedImageStore } from './generated-image-store';

export interface ImageGenerationInput {
  prompt: string;
  size: string;
  n: number;
  style?: string;
  /** The caller's model from the media catalog (upstream name, price, accepted fields); default AI_IMAGES_MODEL. */
  model?: MediaModelInfo;
  /** The model's optional fields as the caller gave them (quality, background, output_format, ..., input_fidelity), passed upstream. */
  extra?: Partial<Record<ImageModelField | 'input_fidelity', unknown>>;
  /** With stream: partial images before the final one (0-3). */
  partialImages?: number;
  /** url (default): the images are kept and answered at {cdn_url} (GeneratedImageStore); b64_json: nothing is kept. */
  responseFormat?: 'url' | 'b64_json';
}

/** A file multer received. */
export interface UploadedImage {
  buffer: Buffer;
  originalname?: string;
}

export interface ImageEditInput extends ImageGenerationInput {
  images: UploadedImage[];
  mask?: UploadedImage;
}

export interface StoredGeneratedImage {
  /** Its storage key under {cdn_url}; none for a b64_json answer. */
  key?: string;
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
    private readonly store: GeneratedImageStore,
    private readonly tokenizer: Tokenizer,
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

  async generate(
    principal: Principal,
    input: ImageGenerationInput,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<StoredGeneratedImage[]> {
    const hint = input.style ? STYLE_HINTS[input.style] : undefined;
    const prompt = hint ? `${input.prompt}\n\nStyle: ${hint}.` : input.prompt;
    return this.run(principal, input, '/v1/vision/generate', requestId, 'prompt', (client, model, extra) =>
      client.generateImages(
        { model, prompt, n: input.n, size: input.size, extra, responseFormat: input.model?.responseFormat },
        signal,
        // A large answer (base64 images) is parsed an image at a time on the key's turns; on a pace that goes on
        // if the client leaves: the upstream answered and bills, so the call is settled and charged.
        this.tokenizer.pace(shareOf(principal)),
      ),
    );
  }

  /**
   * `/v1/images/edits`: every uploaded image and the mask is checked before anything is sent or charged
   * (raster format by its bytes, AI_MEDIA_MAX_PIXELS by its header: a small file that would inflate to a
   * huge bitmap is refused; the mask a PNG of the first image's dimensions), then forwarded as multipart.
   * Priced like a generation of the same size, count and quality, plus the model's inputImagePrice per
   * uploaded image (its high-fidelity price with input_fidelity high).
   */
  async edit(
    principal: Principal,
    input: ImageEditInput,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<StoredGeneratedImage[]> {
    const upload = await this.checkUploads(input);
    return this.run(principal, input, '/v1/images/edits', requestId, 'image', (client, model, extra) =>
      client.editImages(
        {
          model,
          prompt: input.prompt,
          n: input.n,
          ...upload,
          fields: formFields({
            ...extra,
            size: input.size,
            ...(input.model?.responseFormat ? { response_format: 'b64_json' } : {}),
          }),
        },
        signal,
        this.tokenizer.pace(shareOf(principal)),
      ),
    );
  }

  /**
   * `stream: true` (GPT image models): the upstream's partial and completed image events, passed on as
   * they come (b64_json, nothing stored). Reserved like the whole call; the stream's settlement charges
   * the images completed; a client that left pays the hold; a failure before any completed image
   * releases it.
   */
  async stream(
    principal: Principal,
    input: ImageGenerationInput | ImageEditInput,
    kind: 'generation' | 'edit',
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<MediaEventStream> {
    if (!this.client) throw new GatewayError(GatewayErrorCode.ImageGenerationUnconfigured);
    if (input.model?.responseFormat)
      throw new GatewayError(GatewayErrorCode.ImageParameterUnsupported, { name: 'stream', model: input.model.name });
    const upload = kind === 'edit' ? await this.checkUploads(input as ImageEditInput) : undefined;
    const { extra, per1024, inputCost, hold, reservation, upstreamModel, outcome } = await this.prepare(
      principal,
      input,
      kind === 'edit' ? '/v1/images/edits' : '/v1/vision/generate',
      requestId,
    );
    const fields = {
      ...extra,
      size: input.size,
      ...(input.partialImages !== undefined ? { partial_images: input.partialImages } : {}),
    };
    let upstream: AsyncIterable<Record<string, unknown>>;
    try {
      upstream = upload
        ? await this.client.editImagesStream(
            { model: upstreamModel, prompt: input.prompt, n: input.n, ...upload, fields: formFields(fields) },
            signal,
          )
        : await this.client.generateImagesStream(
            { ...fields, model: upstreamModel, prompt: input.prompt, n: input.n },
            signal,
          );
    } catch (e) {
      const error = toMediaError(e, upload ? 'image' : 'prompt');
      await this.metering.settle(reservation, {
        ...outcome,
        status: 'failed',
        costYuan: 0,
        httpStatus: (error as GatewayError).getStatus?.() ?? 500,
        error: (e as Error).message,
      });
      throw error;
    }
    // Counted as each event is taken from the stream, so a client that leaves is billed what reached the relay.
    const completed: Buffer[] = [];
    const events = (async function* () {
      for await (const event of upstream) {
        if (typeof event.type === 'string' && event.type.endsWith('.completed') && typeof event.b64_json === 'string')
          completed.push(Buffer.from(event.b64_json, 'base64'));
        yield event;
      }
    })();
    const settle: MediaEventStream['settle'] = async (status, error) => {
      let cost = inputCost;
      for (const bytes of completed.slice(0, input.n))
        cost +=
          input.size === 'auto' ? await answeredSizeCost(bytes, per1024) : imageGenerationCost(input.size, 1, per1024);
      // The upstream bills what it made once it accepted the stream: a client that leaves pays the hold
      // (as a transcription stream is charged when its client leaves, transcribe-audio.service.ts), and a
      // stream cut after completed images were delivered is recorded as aborted and charged for them
      // (metering charges nothing for a failed call).
      if (status === 'aborted') cost = Math.max(cost, hold);
      const recorded = status === 'failed' && completed.length > 0 ? 'aborted' : status;
      await this.metering.settle(reservation, {
        ...outcome,
        status: recorded,
        costYuan: recorded === 'failed' ? 0 : roundYuan(cost),
        images: Math.min(completed.length, input.n),
        httpStatus: 200,
        error: error?.message,
      });
    };
    return { events, settle };
  }

  /** The checks and reservation every call shares: the model's fields, its price, the budget hold. */
  private async prepare(principal: Principal, input: ImageGenerationInput, endpoint: string, requestId?: string) {
    const extra = Object.fromEntries(Object.entries(input.extra ?? {}).filter(([, v]) => v !== undefined));
    const fields = input.model?.fields;
    // A field the model does not take is refused, not dropped (its meaning would be lost silently).
    for (const name of Object.keys(extra)) {
      const allowed =
        name === 'input_fidelity'
          ? !input.model || !input.model.responseFormat
          : !fields || fields.includes(name as ImageModelField);
      if (!allowed)
        throw new GatewayError(GatewayErrorCode.ImageParameterUnsupported, { name, model: input.model!.name });
    }
    // Priced by the quality asked for where the model's catalog entry says so (qualityPrices).
    const per1024 = input.model ? imagePricePer1024(input.model, extra.quality) : undefined;
    // An edit's input images are billed upstream too (image input tokens, more with input_fidelity high):
    // at the model's inputImagePrice, held with the outputs and charged once the upstream did the work.
    const images = (input as Partial<ImageEditInput>).images;
    const inputCost = images ? imageEditInputPrice(input.model, images.length, extra.input_fidelity) : 0;
    const hold = imageGenerationCost(input.size, input.n, per1024) + inputCost;
    const reservation = await this.metering.reserve(principal, {
      model: input.model?.name ?? this.config.AI_IMAGES_MODEL,
      yuan: hold,
    });
    const upstreamModel = input.model?.upstream ?? this.config.AI_IMAGES_MODEL;
    const outcome = { endpoint, model: input.model?.name ?? upstreamModel, provider: 'images-upstream', requestId };
    return { extra, per1024, inputCost, hold, reservation, upstreamModel, outcome };
  }

  private async run(
    principal: Principal,
    input: ImageGenerationInput,
    endpoint: string,
    requestId: string | undefined,
    /** The request field an input failure names: the images of an edit, the prompt of a generation. */
    param: 'image' | 'prompt',
    call: (
      client: OpenAiMediaClient,
      model: string,
      extra: Record<string, unknown>,
    ) => Promise<Array<{ bytes: Buffer; contentType: string; revisedPrompt?: string }>>,
  ): Promise<StoredGeneratedImage[]> {
    if (!this.client) throw new GatewayError(GatewayErrorCode.ImageGenerationUnconfigured);
    // Images answered by URL are kept: room for them is held on the key's AI_IMAGES_MAX_BYTES_PER_KEY first,
    // so a key without it is refused (429) before anything is reserved or the upstream is called.
    const hold =
      input.responseFormat === 'b64_json' ? undefined : await this.store.hold(principal.id, input.size, input.n);
    let prepared: Awaited<ReturnType<GenerateImageService['prepare']>>;
    try {
      prepared = await this.prepare(principal, input, endpoint, requestId);
    } catch (e) {
      if (hold) await this.store.release(hold);
      throw e;
    }
    const { extra, per1024, inputCost, reservation, upstreamModel, outcome } = prepared;
    try {
      // At most the n images asked for are kept and billed (as a stream's are).
      const images = (await call(this.client, upstreamModel, extra)).slice(0, input.n);
      let cost = inputCost;
      for (const image of images) {
        // b64_json carries no type: jpeg and webp (gpt-image-1 output_format) are told by their bytes.
        image.contentType = sniffImageType(image.bytes);
        cost +=
          input.size === 'auto'
            ? await answeredSizeCost(image.bytes, per1024)
            : imageGenerationCost(input.size, 1, per1024);
      }
      const keys = hold ? await this.store.keep(hold, images) : [];
      const stored: StoredGeneratedImage[] = images.map((image, i) => ({
        key: keys[i],
        bytes: image.bytes,
        revisedPrompt: image.revisedPrompt ?? input.prompt,
      }));
      await this.metering.settle(reservation, {
        ...outcome,
        status: 'ok',
        costYuan: roundYuan(cost),
        images: stored.length,
        httpStatus: 200,
      });
      return stored;
    } catch (e) {
      if (hold) await this.store.release(hold);
      const error = toMediaError(e, param);
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

  /** Each uploaded image and the mask checked (see edit); what the upstream receives. */
  private async checkUploads(input: ImageEditInput): Promise<Pick<ImageEditRequest, 'images' | 'mask'>> {
    if (input.images.length === 0)
      throw new GatewayError(GatewayErrorCode.MissingParameter, {
        message: 'image is required: one or more image files (multipart field image or image[])',
        param: 'image',
      });
    if (input.images.length > MAX_EDIT_IMAGES)
      throw new GatewayError(GatewayErrorCode.InvalidValue, {
        message: `at most ${MAX_EDIT_IMAGES} images`,
        param: 'image',
      });
    if (input.model?.responseFormat && input.images.length > 1)
      throw new GatewayError(GatewayErrorCode.InvalidValue, {
        message: `${input.model.name} edits one image`,
        param: 'image',
      });
    const maxPixels = this.config.AI_MEDIA_MAX_PIXELS;
    const images = [];
    let first: ImageInfo | undefined;
    for (const [i, file] of input.images.entries()) {
      const info = await inspectUpload(file.buffer, maxPixels, 'image');
      if (!['png', 'jpeg', 'webp'].includes(info.format))
        throw new GatewayError(GatewayErrorCode.UnsupportedMediaType, {
          message: `image ${i + 1} is ${info.format}; edits take PNG, JPEG or WebP`,
          param: 'image',
        });
      first ??= info;
      images.push({
        bytes: file.buffer,
        filename: uploadName(file.originalname, `image-${i + 1}`, info.format),
        contentType: `image/${info.format}`,
      });
    }
    if (!input.mask) return { images };
    const mask = await inspectUpload(input.mask.buffer, maxPixels, 'mask');
    if (mask.format !== 'png')
      throw new GatewayError(GatewayErrorCode.InvalidMediaInput, {
        message: `mask must be a PNG (with transparency), not ${mask.format}`,
        param: 'mask',
      });
    if (mask.width !== first!.width || mask.height !== first!.height) {
      throw new GatewayError(GatewayErrorCode.InvalidMediaInput, {
        message: `mask is ${mask.width}x${mask.height}; it must have the first image's dimensions ${first!.width}x${first!.height}`,
        param: 'mask',
      });
    }
    return {
      images,
      mask: {
        bytes: input.mask.buffer,
        filename: uploadName(input.mask.originalname, 'mask', 'png'),
        contentType: 'image/png',
      },
    };
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
export async function downloadGeneratedImage(
  url: string,
  config: GatewayConfig,
  signal?: AbortSignal,
): Promise<{ bytes: Buffer; contentType: string }> {
  if (!/^https?:\/\//i.test(url))
    throw new UpstreamError('image upstream answered a URL that is not http(s)', 'protocol', 200);
  let bytes: Buffer;
  try {
    bytes = await loadImageSource(url, {
      maxBytes: MAX_GENERATED_IMAGE_BYTES,
      timeoutMs: config.AI_MEDIA_UPSTREAM_TIMEOUT_MS,
      maxRedirects: config.AI_MEDIA_FETCH_MAX_REDIRECTS,
      allowedCidrs: allowedFetchCidrs(config),
      signal,
    });
  } catch (e) {
    // The caller did not choose this URL: an upstream fault (502), without the fetch details.
    throw new UpstreamError(
      e instanceof GatewayError && e.code === GatewayErrorCode.ImageUrlForbidden
        ? 'image upstream answered a URL on a non-public address'
        : 'generated image could not be downloaded',
      'protocol',
      200,
    );
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

/** The header check of an uploaded image (format by its bytes, pixel cap), its failure naming the field. */
async function inspectUpload(bytes: Buffer, maxPixels: number, param: 'image' | 'mask'): Promise<ImageInfo> {
  try {
    return await inspectImage(bytes, maxPixels);
  } catch (e) {
    throw toMediaError(e, param);
  }
}

/** The client's file name when it is plain, else a made-up one with the format's extension. */
function uploadName(name: string | undefined, fallback: string, format: string): string {
  return name && /^[\w.-]{1,100}$/.test(name) ? name : `${fallback}.${format === 'jpeg' ? 'jpg' : format}`;
}

/** Multipart fields as strings (undefined left out). */
function formFields(fields: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => [k, String(v)]),
  );
}

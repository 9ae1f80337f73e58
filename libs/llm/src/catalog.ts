// Public model catalog: the contract's models with their limits and yuan prices (overridable per model).

export type ModelKind = 'chat' | 'embeddings';

export interface ModelPrice {
  /** Yuan per 1000 prompt (input) tokens. */
  inputPer1k: number;
  /** Yuan per 1000 completion (output) tokens; 0 for embeddings. */
  outputPer1k: number;
  /**
   * Chat: yuan per 1000 audio prompt tokens (`usage.prompt_tokens_details.audio_tokens`); unset, they
   * cost `inputPer1k` like the text around them.
   */
  audioInputPer1k?: number;
  /** Chat: yuan per 1000 audio output tokens (`completion_tokens_details.audio_tokens`); unset, audio output (`modalities: ["audio"]`) is refused. */
  audioOutputPer1k?: number;
  /** Chat: yuan per call that sends `web_search_options` (the upstream's search fee); unset, such calls are refused. */
  webSearchPerCall?: number;
}

export interface ModelInfo {
  name: string;
  kind: ModelKind;
  /** Chat: context window in tokens. Embeddings: max tokens per input. */
  contextLength: number;
  /** Embeddings only: native vector size. */
  dimensions?: number;
  /** Tokenizer encoding used for counting (js-tiktoken encoding name). */
  encoding: 'cl100k_base' | 'o200k_base';
  price: ModelPrice;
  ownedBy: string;
  /**
   * Chat: what the upstream bills per image in prompt tokens (OpenAI's tile formula: `base` + `tile`
   * per 512 px tile). Default GPT-4o's 85 + 170; e.g. gpt-4o-mini bills 2833 + 5667.
   */
  imageTokens?: { base: number; tile: number };
}

/**
 * Contract tables (ai-platform-api.md). Chat prices are not in the contract: they default to 0 and
 * are meant to be set in the providers file (`models.<name>.price`).
 */
export const DEFAULT_MODELS: Record<string, ModelInfo> = {
  'vendor-gpt-4': {
    name: 'vendor-gpt-4',
    kind: 'chat',
    contextLength: 128_000,
    encoding: 'o200k_base',
    price: { inputPer1k: 0, outputPer1k: 0 },
    ownedBy: 'vendor',
  },
  'vendor-gpt-4-mini': {
    name: 'vendor-gpt-4-mini',
    kind: 'chat',
    contextLength: 128_000,
    encoding: 'o200k_base',
    price: { inputPer1k: 0, outputPer1k: 0 },
    ownedBy: 'vendor',
  },
  'vendor-claude-3': {
    name: 'vendor-claude-3',
    kind: 'chat',
    contextLength: 200_000,
    encoding: 'cl100k_base',
    price: { inputPer1k: 0, outputPer1k: 0 },
    ownedBy: 'vendor',
  },
  'vendor-llama-70b': {
    name: 'vendor-llama-70b',
    kind: 'chat',
    contextLength: 32_000,
    encoding: 'cl100k_base',
    price: { inputPer1k: 0, outputPer1k: 0 },
    ownedBy: 'vendor',
  },
  'text-embedding-v3': {
    name: 'text-embedding-v3',
    kind: 'embeddings',
    contextLength: 8192,
    dimensions: 1536,
    encoding: 'cl100k_base',
    price: { inputPer1k: 0.0001, outputPer1k: 0 },
    ownedBy: 'vendor',
  },
  // v2 has no price in the contract table: priced like v3 until configured.
  'text-embedding-v2': {
    name: 'text-embedding-v2',
    kind: 'embeddings',
    contextLength: 8192,
    dimensions: 1536,
    encoding: 'cl100k_base',
    price: { inputPer1k: 0.0001, outputPer1k: 0 },
    ownedBy: 'vendor',
  },
  'text-embedding-v3-small': {
    name: 'text-embedding-v3-small',
    kind: 'embeddings',
    contextLength: 8192,
    dimensions: 512,
    encoding: 'cl100k_base',
    price: { inputPer1k: 0.00005, outputPer1k: 0 },
    ownedBy: 'vendor',
  },
  'text-embedding-v3-large': {
    name: 'text-embedding-v3-large',
    kind: 'embeddings',
    contextLength: 8192,
    dimensions: 3072,
    encoding: 'cl100k_base',
    price: { inputPer1k: 0.0002, outputPer1k: 0 },
    ownedBy: 'vendor',
  },
};

/**
 * A catalog's entry for a name, own entries only: a client's `model` such as `constructor`, `__proto__`
 * or `toString` is an unknown name, never Object.prototype's member (the tables are plain objects).
 */
export function catalogEntry<T>(table: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(table, name) ? table[name] : undefined;
}

/** A fresh catalog table without a prototype: a name from the providers file (`__proto__`) is an ordinary key. */
export function emptyCatalog<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/**
 * Media models: what a `/v1/audio/transcriptions` (and `/translations`), `/v1/images/generations` (and
 * `/edits`) or `/v1/moderations` caller names in `model`.
 */
export type MediaModelKind = 'transcription' | 'image' | 'moderation';
export const MEDIA_MODEL_KINDS: readonly MediaModelKind[] = ['transcription', 'image', 'moderation'];

/** gpt-image-1's optional request fields (OpenAI images API); dall-e-3 knows `quality` (standard, hd) only. */
export const IMAGE_MODEL_FIELDS = [
  'quality',
  'background',
  'output_format',
  'output_compression',
  'moderation',
] as const;
export type ImageModelField = (typeof IMAGE_MODEL_FIELDS)[number];
/** Values of an image request's `quality` (dall-e-3: standard, hd; gpt-image-1: low, medium, high, auto). */
export const IMAGE_QUALITIES = ['standard', 'hd', 'low', 'medium', 'high', 'auto'] as const;
export type ImageQuality = (typeof IMAGE_QUALITIES)[number];

export interface MediaModelInfo {
  name: string;
  kind: MediaModelKind;
  /**
   * Model name sent to the media upstream (AI_TRANSCRIBE_BASE_URL / AI_IMAGES_BASE_URL); defaults to the
   * public name. Moderation models go to the providers file's OpenAI-type deployments that list them,
   * under the name the deployment gives (this field is not used for them).
   */
  upstream: string;
  /**
   * Transcription: yuan per minute of audio (pro rata by the second). Image: yuan per 1024x1024 image
   * (other sizes by pixel count). Moderation: yuan per classified input (one per entry of `results`).
   */
  price: number;
  /** Image models: the optional fields the upstream model accepts; any other one is a 400 naming it. */
  fields: readonly ImageModelField[];
  /** Image models: whether the upstream takes `response_format` (dall-e); gpt-image models always answer b64_json and refuse it. */
  responseFormat: boolean;
  /**
   * Image models: yuan per 1024x1024 image by the request's `quality` (none sent: `defaultQuality`),
   * for upstreams whose cost depends on it (gpt-image-1 high costs ~15x low); a quality not listed is
   * charged the highest of `price` and the listed prices (imagePricePer1024).
   */
  qualityPrices?: Partial<Record<ImageQuality, number>>;
  /** Image models: the quality the upstream model uses when the request sends none (what such a request is priced as); default `auto`. */
  defaultQuality?: ImageQuality;
  /**
   * Image models: yuan per image given to an edit (GPT image models bill input images as image tokens),
   * added to the outputs' price; `highFidelity` with `input_fidelity: high` (thousands of tokens more per
   * image). Unset: input images are free (imageEditInputPrice).
   */
  inputImagePrice?: { standard: number; highFidelity: number };
  ownedBy: string;
}

/**
 * Default media catalog: OpenAI's transcription and image model names at the contract's prices
 * (0.02 yuan per minute of audio, 0.10 yuan per 1024x1024 image). The providers file may add
 * models, change prices or map a name to another upstream model (`mediaModels:`, see mergeMediaModels).
 */
export const DEFAULT_MEDIA_MODELS: Record<string, MediaModelInfo> = {
  'whisper-1': {
    name: 'whisper-1',
    kind: 'transcription',
    upstream: 'whisper-1',
    price: 0.02,
    fields: [],
    responseFormat: false,
    ownedBy: 'openai',
  },
  'gpt-4o-transcribe': {
    name: 'gpt-4o-transcribe',
    kind: 'transcription',
    upstream: 'gpt-4o-transcribe',
    price: 0.02,
    fields: [],
    responseFormat: false,
    ownedBy: 'openai',
  },
  'gpt-4o-mini-transcribe': {
    name: 'gpt-4o-mini-transcribe',
    kind: 'transcription',
    upstream: 'gpt-4o-mini-transcribe',
    price: 0.02,
    fields: [],
    responseFormat: false,
    ownedBy: 'openai',
  },
  'dall-e-2': {
    name: 'dall-e-2',
    kind: 'image',
    upstream: 'dall-e-2',
    price: 0.1,
    fields: [],
    responseFormat: true,
    defaultQuality: 'standard',
    ownedBy: 'openai',
  },
  'dall-e-3': {
    name: 'dall-e-3',
    kind: 'image',
    upstream: 'dall-e-3',
    price: 0.1,
    fields: ['quality'],
    responseFormat: true,
    defaultQuality: 'standard',
    ownedBy: 'openai',
  },
  'gpt-image-1': {
    name: 'gpt-image-1',
    kind: 'image',
    upstream: 'gpt-image-1',
    price: 0.1,
    fields: [...IMAGE_MODEL_FIELDS],
    responseFormat: false,
    defaultQuality: 'auto',
    ownedBy: 'openai',
  },
  // OpenAI does not charge for moderations: free until the providers file prices them (per input).
  'omni-moderation-latest': {
    name: 'omni-moderation-latest',
    kind: 'moderation',
    upstream: 'omni-moderation-latest',
    price: 0,
    fields: [],
    responseFormat: false,
    ownedBy: 'openai',
  },
  'omni-moderation-2024-09-26': {
    name: 'omni-moderation-2024-09-26',
    kind: 'moderation',
    upstream: 'omni-moderation-2024-09-26',
    price: 0,
    fields: [],
    responseFormat: false,
    ownedBy: 'openai',
  },
  'text-moderation-latest': {
    name: 'text-moderation-latest',
    kind: 'moderation',
    upstream: 'text-moderation-latest',
    price: 0,
    fields: [],
    responseFormat: false,
    ownedBy: 'openai',
  },
  'text-moderation-stable': {
    name: 'text-moderation-stable',
    kind: 'moderation',
    upstream: 'text-moderation-stable',
    price: 0,
    fields: [],
    responseFormat: false,
    ownedBy: 'openai',
  },
};

/** The moderation model a `/v1/moderations` request without `model` uses (the OpenAI default). */
export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';

/**
 * The media catalog: DEFAULT_MEDIA_MODELS with the providers file's `mediaModels` map applied, e.g.
 * `{ "gpt-4o-transcribe": { "upstream": "whisper-large-v3", "price": 0.03 }, "my-sd": { "kind": "image",
 * "price": 0.05, "fields": ["quality"] } }`. `fail` makes the providers file's error for a path.
 */
export function mergeMediaModels(raw: unknown, fail: (message: string) => Error): Record<string, MediaModelInfo> {
  const models = emptyCatalog<MediaModelInfo>();
  for (const [name, info] of Object.entries(DEFAULT_MEDIA_MODELS)) models[name] = { ...info, fields: [...info.fields] };
  if (raw === undefined || raw === null) return models;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw fail('mediaModels must be an object');
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    const path = `mediaModels.${name}`;
    const o = (value ?? {}) as Record<string, unknown>;
    if (typeof o !== 'object' || Array.isArray(o)) throw fail(`${path} must be an object`);
    const base = catalogEntry(models, name);
    const kind = (o.kind ?? base?.kind) as MediaModelKind;
    if (!MEDIA_MODEL_KINDS.includes(kind)) throw fail(`${path}.kind must be transcription, image or moderation`);
    if (o.upstream !== undefined && (typeof o.upstream !== 'string' || o.upstream.trim() === ''))
      throw fail(`${path}.upstream must be a non-empty string`);
    if (o.price !== undefined && (typeof o.price !== 'number' || !Number.isFinite(o.price) || o.price < 0))
      throw fail(`${path}.price must be a number >= 0`);
    if (
      o.fields !== undefined &&
      (!Array.isArray(o.fields) ||
        (o.fields as unknown[]).some((f) => !(IMAGE_MODEL_FIELDS as readonly unknown[]).includes(f)))
    )
      throw fail(`${path}.fields must be a list of ${IMAGE_MODEL_FIELDS.join(', ')}`);
    if (o.responseFormat !== undefined && typeof o.responseFormat !== 'boolean')
      throw fail(`${path}.responseFormat must be true or false`);
    const qualityPrices = qualityPricesOf(o.qualityPrices, kind, `${path}.qualityPrices`, fail);
    for (const field of ['inputImagePrice', 'highFidelityInputImagePrice'] as const) {
      if (o[field] === undefined) continue;
      if (kind !== 'image') throw fail(`${path}.${field} is for image models only`);
      if (typeof o[field] !== 'number' || !Number.isFinite(o[field]) || o[field] < 0)
        throw fail(`${path}.${field} must be a number >= 0`);
    }
    if (
      o.defaultQuality !== undefined &&
      (kind !== 'image' || !(IMAGE_QUALITIES as readonly unknown[]).includes(o.defaultQuality))
    ) {
      throw fail(`${path}.defaultQuality must be one of ${IMAGE_QUALITIES.join(', ')} (image models only)`);
    }
    models[name] = {
      name,
      kind,
      upstream: o.upstream ?? base?.upstream ?? name,
      price: o.price ?? base?.price ?? (kind === 'image' ? 0.1 : kind === 'moderation' ? 0 : 0.02),
      fields: (o.fields as ImageModelField[] | undefined) ?? base?.fields ?? [],
      responseFormat: o.responseFormat ?? base?.responseFormat ?? kind === 'image',
      ownedBy: typeof o.ownedBy === 'string' ? o.ownedBy : (base?.ownedBy ?? 'gateway'),
    };
    const prices = qualityPrices ?? base?.qualityPrices;
    if (prices) models[name].qualityPrices = prices;
    const defaultQuality = (o.defaultQuality as ImageQuality | undefined) ?? base?.defaultQuality;
    if (defaultQuality) models[name].defaultQuality = defaultQuality;
    const standard = (o.inputImagePrice as number | undefined) ?? base?.inputImagePrice?.standard;
    const highFidelity = (o.highFidelityInputImagePrice as number | undefined) ?? base?.inputImagePrice?.highFidelity;
    // High fidelity never costs less than the standard price of an input image.
    if (standard !== undefined || highFidelity !== undefined)
      models[name].inputImagePrice = {
        standard: standard ?? 0,
        highFidelity: Math.max(standard ?? 0, highFidelity ?? 0),
      };
  }
  return models;
}

function qualityPricesOf(
  raw: unknown,
  kind: MediaModelKind,
  path: string,
  fail: (message: string) => Error,
): Partial<Record<ImageQuality, number>> | undefined {
  if (raw === undefined) return undefined;
  if (kind !== 'image') throw fail(`${path} is for image models only`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw fail(`${path} must be an object of quality: price`);
  const prices: Partial<Record<ImageQuality, number>> = {};
  for (const [quality, price] of Object.entries(raw)) {
    if (!(IMAGE_QUALITIES as readonly string[]).includes(quality))
      throw fail(`${path}.${quality}: the qualities are ${IMAGE_QUALITIES.join(', ')}`);
    if (typeof price !== 'number' || !Number.isFinite(price) || price < 0)
      throw fail(`${path}.${quality} must be a number >= 0`);
    prices[quality as ImageQuality] = price;
  }
  return prices;
}

/**
 * Yuan per 1024x1024 image of `model` at the request's `quality` (none sent: the model's
 * `defaultQuality`, else `auto`): its qualityPrices entry; a quality the entry does not list costs the
 * highest of `price` and the listed prices (an upstream may take `hd` or `auto` as its best quality:
 * never charged less than that), and a model without qualityPrices costs `price`.
 */
export function imagePricePer1024(
  model: Pick<MediaModelInfo, 'price' | 'qualityPrices' | 'defaultQuality'>,
  quality: unknown,
): number {
  const prices = model.qualityPrices;
  if (!prices) return model.price;
  const q = typeof quality === 'string' ? quality : (model.defaultQuality ?? 'auto');
  return Object.hasOwn(prices, q) ? prices[q as ImageQuality]! : Math.max(model.price, ...Object.values(prices));
}

/** Yuan for the input images of an edit: `count` images at the model's inputImagePrice (high fidelity when asked); 0 when it sets none. */
export function imageEditInputPrice(
  model: Pick<MediaModelInfo, 'inputImagePrice'> | undefined,
  count: number,
  fidelity: unknown,
): number {
  const prices = model?.inputImagePrice;
  if (!prices) return 0;
  return count * (fidelity === 'high' ? prices.highFidelity : prices.standard);
}

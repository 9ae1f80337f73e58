// JSON Schemas (draft 2020-12) of the media operations' answers and stream events, written for this
// project from the facts OpenAI's API reference states (field names, types, required fields, enums).
// Self-contained: a test compiles them with ajv (`import Ajv2020 from 'ajv/dist/2020'`).

const MODERATION_CATEGORIES = [
  'hate',
  'hate/threatening',
  'harassment',
  'harassment/threatening',
  'illicit',
  'illicit/violent',
  'self-harm',
  'self-harm/intent',
  'self-harm/instructions',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
];

const mapOf = (value: object, nullable: string[] = []) => ({
  type: 'object',
  required: MODERATION_CATEGORIES,
  properties: Object.fromEntries(
    MODERATION_CATEGORIES.map((c) => [c, nullable.includes(c) ? { anyOf: [value, { type: 'null' }] } : value]),
  ),
});

/** POST /v1/moderations answer: an id, the model, one result per classified input. */
export const moderationResponseSchema = {
  type: 'object',
  required: ['id', 'model', 'results'],
  properties: {
    id: { type: 'string' },
    model: { type: 'string' },
    results: {
      type: 'array',
      items: {
        type: 'object',
        required: ['flagged', 'categories', 'category_scores', 'category_applied_input_types'],
        properties: {
          flagged: { type: 'boolean' },
          categories: mapOf({ type: 'boolean' }, ['illicit', 'illicit/violent']),
          category_scores: mapOf({ type: 'number' }),
          category_applied_input_types: mapOf({ type: 'array', items: { enum: ['text', 'image'] } }),
        },
      },
    },
  },
} as const;

/** Transcription or translation, response_format json: the text. */
export const audioTextJsonSchema = {
  type: 'object',
  required: ['text'],
  properties: { text: { type: 'string' } },
} as const;

/** A segment of a verbose_json transcript or translation: every one of Whisper's decoding fields is required. */
const transcriptionSegment = {
  type: 'object',
  required: [
    'id',
    'seek',
    'start',
    'end',
    'text',
    'tokens',
    'temperature',
    'avg_logprob',
    'compression_ratio',
    'no_speech_prob',
  ],
  properties: {
    id: { type: 'integer' },
    seek: { type: 'integer' },
    start: { type: 'number' },
    end: { type: 'number' },
    text: { type: 'string' },
    tokens: { type: 'array', items: { type: 'integer' } },
    temperature: { type: 'number' },
    avg_logprob: { type: 'number' },
    compression_ratio: { type: 'number' },
    no_speech_prob: { type: 'number' },
  },
} as const;

const durationUsage = {
  type: 'object',
  required: ['type', 'seconds'],
  properties: { type: { const: 'duration' }, seconds: { type: 'number' } },
} as const;
const tokenUsage = {
  type: 'object',
  required: ['type', 'input_tokens', 'output_tokens', 'total_tokens'],
  properties: {
    type: { const: 'tokens' },
    input_tokens: { type: 'integer' },
    input_token_details: {
      type: 'object',
      properties: { text_tokens: { type: 'integer' }, audio_tokens: { type: 'integer' } },
    },
    output_tokens: { type: 'integer' },
    total_tokens: { type: 'integer' },
  },
} as const;

/** Translation, response_format verbose_json: language, duration and text required; segments optional. */
export const translationVerboseSchema = {
  type: 'object',
  required: ['language', 'duration', 'text'],
  properties: {
    language: { type: 'string' },
    duration: { type: 'number' },
    text: { type: 'string' },
    segments: { type: 'array', items: transcriptionSegment },
  },
} as const;

/** Transcription, response_format verbose_json: as a translation's, plus words and a duration usage. */
export const transcriptionVerboseSchema = {
  type: 'object',
  required: ['language', 'duration', 'text'],
  properties: {
    ...translationVerboseSchema.properties,
    words: {
      type: 'array',
      items: {
        type: 'object',
        required: ['word', 'start', 'end'],
        properties: { word: { type: 'string' }, start: { type: 'number' }, end: { type: 'number' } },
      },
    },
    usage: durationUsage,
  },
} as const;

/** Transcription, response_format diarized_json: segments with a speaker each. */
export const transcriptionDiarizedSchema = {
  type: 'object',
  required: ['task', 'duration', 'text', 'segments'],
  properties: {
    task: { const: 'transcribe' },
    duration: { type: 'number' },
    text: { type: 'string' },
    segments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'id', 'start', 'end', 'text', 'speaker'],
        properties: {
          type: { const: 'transcript.text.segment' },
          id: { type: 'string' },
          start: { type: 'number' },
          end: { type: 'number' },
          text: { type: 'string' },
          speaker: { type: 'string' },
        },
      },
    },
    usage: { anyOf: [tokenUsage, durationUsage] },
  },
} as const;

const logprobs = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      token: { type: 'string' },
      logprob: { type: 'number' },
      bytes: { type: 'array', items: { type: 'integer' } },
    },
  },
};

/** Streamed transcription events, told apart by `type`. */
export const transcriptTextDeltaSchema = {
  type: 'object',
  required: ['type', 'delta'],
  properties: {
    type: { const: 'transcript.text.delta' },
    delta: { type: 'string' },
    logprobs,
    segment_id: { type: 'string' },
  },
} as const;

export const transcriptTextDoneSchema = {
  type: 'object',
  required: ['type', 'text'],
  properties: {
    type: { const: 'transcript.text.done' },
    text: { type: 'string' },
    logprobs,
    usage: tokenUsage,
  },
} as const;

/** Streamed speech (stream_format sse): base64 audio chunks, then the usage. */
export const speechAudioDeltaSchema = {
  type: 'object',
  required: ['type', 'audio'],
  properties: { type: { const: 'speech.audio.delta' }, audio: { type: 'string', contentEncoding: 'base64' } },
} as const;

export const speechAudioDoneSchema = {
  type: 'object',
  required: ['type', 'usage'],
  properties: {
    type: { const: 'speech.audio.done' },
    usage: {
      type: 'object',
      required: ['input_tokens', 'output_tokens', 'total_tokens'],
      properties: {
        input_tokens: { type: 'integer' },
        output_tokens: { type: 'integer' },
        total_tokens: { type: 'integer' },
      },
    },
  },
} as const;

const imageUsage = {
  type: 'object',
  required: ['total_tokens', 'input_tokens', 'output_tokens', 'input_tokens_details'],
  properties: {
    total_tokens: { type: 'integer' },
    input_tokens: { type: 'integer' },
    output_tokens: { type: 'integer' },
    input_tokens_details: {
      type: 'object',
      required: ['text_tokens', 'image_tokens'],
      properties: { text_tokens: { type: 'integer' }, image_tokens: { type: 'integer' } },
    },
  },
};

const imageEventFields = {
  b64_json: { type: 'string' },
  created_at: { type: 'integer' },
  size: { enum: ['1024x1024', '1024x1536', '1536x1024', 'auto'] },
  quality: { enum: ['low', 'medium', 'high', 'auto'] },
  background: { enum: ['transparent', 'opaque', 'auto'] },
  output_format: { enum: ['png', 'webp', 'jpeg'] },
};
const imageEventRequired = ['type', 'b64_json', 'created_at', 'size', 'quality', 'background', 'output_format'];

/** image_generation.partial_image / image_edit.partial_image (`prefix`). */
export const imagePartialEventSchema = (prefix: 'image_generation' | 'image_edit') => ({
  type: 'object',
  required: [...imageEventRequired, 'partial_image_index'],
  properties: {
    type: { const: `${prefix}.partial_image` },
    ...imageEventFields,
    partial_image_index: { type: 'integer', minimum: 0 },
  },
});

/** image_generation.completed / image_edit.completed (`prefix`). */
export const imageCompletedEventSchema = (prefix: 'image_generation' | 'image_edit') => ({
  type: 'object',
  required: [...imageEventRequired, 'usage'],
  properties: { type: { const: `${prefix}.completed` }, ...imageEventFields, usage: imageUsage },
});

/** POST /v1/images/edits (and generations) answer: `created` required; each image a URL or base64. */
export const imagesResponseSchema = {
  type: 'object',
  required: ['created'],
  properties: {
    created: { type: 'integer' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          b64_json: { type: 'string' },
          url: { type: 'string', format: 'uri' },
          revised_prompt: { type: 'string' },
        },
      },
    },
    background: { enum: ['transparent', 'opaque'] },
    output_format: { enum: ['png', 'webp', 'jpeg'] },
    size: { enum: ['1024x1024', '1024x1536', '1536x1024'] },
    quality: { enum: ['low', 'medium', 'high'] },
    usage: imageUsage,
  },
} as const;

/** Each media stream event by its `type`. */
export const mediaEventSchemas: Record<string, object> = {
  'transcript.text.delta': transcriptTextDeltaSchema,
  'transcript.text.done': transcriptTextDoneSchema,
  'speech.audio.delta': speechAudioDeltaSchema,
  'speech.audio.done': speechAudioDoneSchema,
  'image_generation.partial_image': imagePartialEventSchema('image_generation'),
  'image_generation.completed': imageCompletedEventSchema('image_generation'),
  'image_edit.partial_image': imagePartialEventSchema('image_edit'),
  'image_edit.completed': imageCompletedEventSchema('image_edit'),
};

/**
 * The answers above by the conformance harness's names (`METHOD /path`, `...#format:<response_format>`
 * for the audio formats after the default json, `...#event:<type>` for streamed events).
 */
export const mediaSchemas: Record<string, object> = {
  'POST /v1/moderations': moderationResponseSchema,
  'POST /v1/audio/translations': audioTextJsonSchema,
  'POST /v1/audio/translations#format:verbose_json': translationVerboseSchema,
  'POST /v1/audio/translations#format:text': { type: 'string' },
  'POST /v1/audio/transcriptions': audioTextJsonSchema,
  'POST /v1/audio/transcriptions#format:verbose_json': transcriptionVerboseSchema,
  'POST /v1/audio/transcriptions#format:diarized_json': transcriptionDiarizedSchema,
  'POST /v1/audio/transcriptions#format:text': { type: 'string' },
  'POST /v1/audio/transcriptions#event:transcript.text.delta': transcriptTextDeltaSchema,
  'POST /v1/audio/transcriptions#event:transcript.text.done': transcriptTextDoneSchema,
  'POST /v1/audio/speech#event:speech.audio.delta': speechAudioDeltaSchema,
  'POST /v1/audio/speech#event:speech.audio.done': speechAudioDoneSchema,
  'POST /v1/images/generations': imagesResponseSchema,
  'POST /v1/images/generations#event:image_generation.partial_image': imagePartialEventSchema('image_generation'),
  'POST /v1/images/generations#event:image_generation.completed': imageCompletedEventSchema('image_generation'),
  'POST /v1/images/edits': imagesResponseSchema,
  'POST /v1/images/edits#event:image_edit.partial_image': imagePartialEventSchema('image_edit'),
  'POST /v1/images/edits#event:image_edit.completed': imageCompletedEventSchema('image_edit'),
};

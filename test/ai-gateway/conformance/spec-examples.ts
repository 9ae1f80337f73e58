// The example requests OpenAI's OpenAPI document (openai/openai-openapi openapi.json 2.3.0) gives for each
// operation this gateway serves (its x-oaiMeta examples and request-body examples), re-typed as fixtures:
// the request shapes they state, with these mappings to the test's gateway, which serves only its catalog:
// - model names: the spec's chat models (gpt-5.4, o3-mini) -> vendor-gpt-4, text-embedding-ada-002 ->
//   text-embedding-v3, gpt-image-1.5 -> gpt-image-1 (gpt-4o-transcribe-diarize is in the fixture's catalog);
// - ids: resp_123 / resp_abc123 -> a response the suite stored first (the test fills it in);
// - files: `@path` uploads -> a spoken WAV or a small PNG the test makes (the file names are kept);
// - the moderation image URL (example.com) -> the same path on the test's local media upstream (the
//   gateway fetches it; this sandbox has no internet).

export const CHAT = 'POST /v1/chat/completions';
export const COMPLETIONS = 'POST /v1/completions';
export const EMBEDDINGS = 'POST /v1/embeddings';
export const RESPONSES = 'POST /v1/responses';
export const RESPONSE = 'GET /v1/responses/{response_id}';
export const RESPONSE_DELETE = 'DELETE /v1/responses/{response_id}';
export const INPUT_ITEMS = 'GET /v1/responses/{response_id}/input_items';
export const MODERATIONS = 'POST /v1/moderations';
export const TRANSLATIONS = 'POST /v1/audio/translations';
export const TRANSCRIPTIONS = 'POST /v1/audio/transcriptions';
export const SPEECH = 'POST /v1/audio/speech';
export const IMAGES = 'POST /v1/images/generations';
export const IMAGE_EDITS = 'POST /v1/images/edits';

/** A multipart upload: form fields (a list for repeated `name[]` fields) and files made by the test. */
export interface FormRequest {
  fields: Record<string, string | string[]>;
  files: Array<{ field: string; name: string; kind: 'audio' | 'image' }>;
}

export interface SpecExample {
  name: string;
  operation: string;
  path: string;
  body?: Record<string, unknown>;
  form?: FormRequest;
}

/** The placeholder the test replaces with the id of a response it stored. */
export const STORED_RESPONSE = 'resp_123';

const CHAT_EXAMPLES: SpecExample[] = [
  {
    name: 'chat: Default',
    operation: CHAT,
    path: '/v1/chat/completions',
    body: {
      model: 'vendor-gpt-4',
      messages: [
        { role: 'developer', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'Hello!' },
      ],
    },
  },
  {
    name: 'chat: Image input',
    operation: CHAT,
    path: '/v1/chat/completions',
    body: {
      model: 'vendor-gpt-4',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this image?' },
            {
              type: 'image_url',
              image_url: {
                url: 'https://upload.wikimedia.org/wikipedia/commons/thumb/d/dd/Gfp-wisconsin-madison-the-nature-boardwalk.jpg/2560px-Gfp-wisconsin-madison-the-nature-boardwalk.jpg',
              },
            },
          ],
        },
      ],
      max_tokens: 300,
    },
  },
  {
    name: 'chat: Streaming',
    operation: CHAT,
    path: '/v1/chat/completions',
    body: {
      model: 'vendor-gpt-4',
      messages: [
        { role: 'developer', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'Hello!' },
      ],
      stream: true,
    },
  },
  {
    name: 'chat: Functions',
    operation: CHAT,
    path: '/v1/chat/completions',
    body: {
      model: 'vendor-gpt-4',
      messages: [{ role: 'user', content: 'What is the weather like in Boston today?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_current_weather',
            description: 'Get the current weather in a given location',
            parameters: {
              type: 'object',
              properties: {
                location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' },
                unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
              },
              required: ['location'],
            },
          },
        },
      ],
      tool_choice: 'auto',
    },
  },
  {
    name: 'chat: Logprobs',
    operation: CHAT,
    path: '/v1/chat/completions',
    body: { model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'Hello!' }], logprobs: true, top_logprobs: 2 },
  },
  {
    name: 'completions: No streaming',
    operation: COMPLETIONS,
    path: '/v1/completions',
    body: { model: 'vendor-gpt-4', prompt: 'Say this is a test', max_tokens: 7, temperature: 0 },
  },
  {
    name: 'completions: Streaming',
    operation: COMPLETIONS,
    path: '/v1/completions',
    body: { model: 'vendor-gpt-4', prompt: 'Say this is a test', max_tokens: 7, temperature: 0, stream: true },
  },
  {
    name: 'embeddings: example',
    operation: EMBEDDINGS,
    path: '/v1/embeddings',
    body: { input: 'The food was delicious and the waiter...', model: 'text-embedding-v3', encoding_format: 'float' },
  },
  {
    name: 'embeddings: input string',
    operation: EMBEDDINGS,
    path: '/v1/embeddings',
    body: { model: 'text-embedding-v3', input: 'The quick brown fox jumped over the lazy dog' },
  },
  {
    name: 'embeddings: input strings',
    operation: EMBEDDINGS,
    path: '/v1/embeddings',
    body: { model: 'text-embedding-v3', input: ['This is a test.'] },
  },
  {
    name: 'embeddings: input token array',
    operation: EMBEDDINGS,
    path: '/v1/embeddings',
    body: { model: 'text-embedding-v3', input: [1212, 318, 257, 1332, 13] },
  },
  {
    name: 'embeddings: input token arrays',
    operation: EMBEDDINGS,
    path: '/v1/embeddings',
    body: { model: 'text-embedding-v3', input: [[1212, 318, 257, 1332, 13]] },
  },
  {
    name: 'embeddings: user',
    operation: EMBEDDINGS,
    path: '/v1/embeddings',
    body: {
      model: 'text-embedding-v3',
      input: 'This is a test.',
      user: 'user-1234',
      encoding_format: 'base64',
      dimensions: 256,
    },
  },
];

const weatherFunction = {
  type: 'function',
  name: 'get_current_weather',
  description: 'Get the current weather in a given location',
  parameters: {
    type: 'object',
    properties: {
      location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    },
    required: ['location', 'unit'],
  },
};

const RESPONSES_EXAMPLES: SpecExample[] = [
  {
    name: 'responses: Text input',
    operation: RESPONSES,
    path: '/v1/responses',
    body: { model: 'vendor-gpt-4', input: 'Tell me a three sentence bedtime story about a unicorn.' },
  },
  {
    name: 'responses: Image input',
    operation: RESPONSES,
    path: '/v1/responses',
    body: {
      model: 'vendor-gpt-4',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'what is in this image?' },
            {
              type: 'input_image',
              image_url:
                'https://upload.wikimedia.org/wikipedia/commons/thumb/d/dd/Gfp-wisconsin-madison-the-nature-boardwalk.jpg/2560px-Gfp-wisconsin-madison-the-nature-boardwalk.jpg',
            },
          ],
        },
      ],
    },
  },
  {
    name: 'responses: File input',
    operation: RESPONSES,
    path: '/v1/responses',
    body: {
      model: 'vendor-gpt-4',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'what is in this file?' },
            { type: 'input_file', file_url: 'https://www.berkshirehathaway.com/letters/2024ltr.pdf', detail: 'auto' },
          ],
        },
      ],
    },
  },
  {
    name: 'responses: Web search',
    operation: RESPONSES,
    path: '/v1/responses',
    body: {
      model: 'vendor-gpt-4',
      tools: [{ type: 'web_search_preview' }],
      input: 'What was a positive news story from today?',
    },
  },
  {
    name: 'responses: File search',
    operation: RESPONSES,
    path: '/v1/responses',
    body: {
      model: 'vendor-gpt-4',
      tools: [{ type: 'file_search', vector_store_ids: ['vs_1234567890'], max_num_results: 20 }],
      input: 'What are the attributes of an ancient brown dragon?',
    },
  },
  {
    name: 'responses: Streaming',
    operation: RESPONSES,
    path: '/v1/responses',
    body: { model: 'vendor-gpt-4', instructions: 'You are a helpful assistant.', input: 'Hello!', stream: true },
  },
  {
    name: 'responses: Functions',
    operation: RESPONSES,
    path: '/v1/responses',
    body: {
      model: 'vendor-gpt-4',
      input: 'What is the weather like in Boston today?',
      tools: [weatherFunction],
      tool_choice: 'auto',
    },
  },
  {
    name: 'responses: Reasoning',
    operation: RESPONSES,
    path: '/v1/responses',
    body: { model: 'vendor-gpt-4', input: 'How much wood would a woodchuck chuck?', reasoning: { effort: 'high' } },
  },
  // Retrieve and list before the delete that removes the stored response.
  { name: 'responses: retrieve', operation: RESPONSE, path: `/v1/responses/${STORED_RESPONSE}` },
  { name: 'responses: input items', operation: INPUT_ITEMS, path: `/v1/responses/${STORED_RESPONSE}/input_items` },
  { name: 'responses: delete', operation: RESPONSE_DELETE, path: `/v1/responses/${STORED_RESPONSE}` },
];

const MEDIA_EXAMPLES: SpecExample[] = [
  {
    name: 'moderations: Single string',
    operation: MODERATIONS,
    path: '/v1/moderations',
    body: { input: 'I want to kill them.' },
  },
  {
    name: 'moderations: Image and text',
    operation: MODERATIONS,
    path: '/v1/moderations',
    body: {
      model: 'omni-moderation-latest',
      input: [
        { type: 'text', text: '...text to classify goes here...' },
        { type: 'image_url', image_url: { url: 'https://example.com/image.png' } },
      ],
    },
  },
  {
    name: 'translations: example',
    operation: TRANSLATIONS,
    path: '/v1/audio/translations',
    form: { fields: { model: 'whisper-1' }, files: [{ field: 'file', name: 'german.m4a', kind: 'audio' }] },
  },
  {
    name: 'transcriptions: Default',
    operation: TRANSCRIPTIONS,
    path: '/v1/audio/transcriptions',
    form: { fields: { model: 'gpt-4o-transcribe' }, files: [{ field: 'file', name: 'audio.mp3', kind: 'audio' }] },
  },
  {
    name: 'transcriptions: Diarization',
    operation: TRANSCRIPTIONS,
    path: '/v1/audio/transcriptions',
    form: {
      fields: {
        model: 'gpt-4o-transcribe-diarize',
        response_format: 'diarized_json',
        chunking_strategy: 'auto',
        'known_speaker_names[]': ['agent'],
        'known_speaker_references[]': ['data:audio/wav;base64,AAA...'],
      },
      files: [{ field: 'file', name: 'meeting.wav', kind: 'audio' }],
    },
  },
  {
    name: 'transcriptions: Streaming',
    operation: TRANSCRIPTIONS,
    path: '/v1/audio/transcriptions',
    form: {
      fields: { model: 'gpt-4o-mini-transcribe', stream: 'true' },
      files: [{ field: 'file', name: 'audio.mp3', kind: 'audio' }],
    },
  },
  {
    name: 'transcriptions: Logprobs',
    operation: TRANSCRIPTIONS,
    path: '/v1/audio/transcriptions',
    form: {
      fields: { 'include[]': ['logprobs'], model: 'gpt-4o-transcribe', response_format: 'json' },
      files: [{ field: 'file', name: 'audio.mp3', kind: 'audio' }],
    },
  },
  {
    name: 'transcriptions: Word timestamps',
    operation: TRANSCRIPTIONS,
    path: '/v1/audio/transcriptions',
    form: {
      fields: { 'timestamp_granularities[]': ['word'], model: 'whisper-1', response_format: 'verbose_json' },
      files: [{ field: 'file', name: 'audio.mp3', kind: 'audio' }],
    },
  },
  {
    name: 'transcriptions: Segment timestamps',
    operation: TRANSCRIPTIONS,
    path: '/v1/audio/transcriptions',
    form: {
      fields: { 'timestamp_granularities[]': ['segment'], model: 'whisper-1', response_format: 'verbose_json' },
      files: [{ field: 'file', name: 'audio.mp3', kind: 'audio' }],
    },
  },
  {
    name: 'speech: Default',
    operation: SPEECH,
    path: '/v1/audio/speech',
    body: { model: 'gpt-4o-mini-tts', input: 'The quick brown fox jumped over the lazy dog.', voice: 'alloy' },
  },
  {
    name: 'speech: SSE Stream Format',
    operation: SPEECH,
    path: '/v1/audio/speech',
    body: {
      model: 'gpt-4o-mini-tts',
      input: 'The quick brown fox jumped over the lazy dog.',
      voice: 'alloy',
      stream_format: 'sse',
    },
  },
  {
    name: 'images: Generate image',
    operation: IMAGES,
    path: '/v1/images/generations',
    body: { model: 'gpt-image-1', prompt: 'A cute baby sea otter', n: 1, size: '1024x1024' },
  },
  {
    name: 'images: Streaming',
    operation: IMAGES,
    path: '/v1/images/generations',
    body: { model: 'gpt-image-1', prompt: 'A cute baby sea otter', n: 1, size: '1024x1024', stream: true },
  },
  {
    name: 'image edits: Edit image',
    operation: IMAGE_EDITS,
    path: '/v1/images/edits',
    form: {
      fields: { model: 'gpt-image-1', prompt: 'Create a lovely gift basket with these four items in it' },
      files: ['body-lotion.png', 'bath-bomb.png', 'incense-kit.png', 'soap.png'].map((name) => ({
        field: 'image[]',
        name,
        kind: 'image' as const,
      })),
    },
  },
  {
    name: 'image edits: Streaming',
    operation: IMAGE_EDITS,
    path: '/v1/images/edits',
    form: {
      fields: {
        model: 'gpt-image-1',
        prompt: 'Create a lovely gift basket with these four items in it',
        stream: 'true',
      },
      files: ['body-lotion.png', 'bath-bomb.png', 'incense-kit.png', 'soap.png'].map((name) => ({
        field: 'image[]',
        name,
        kind: 'image' as const,
      })),
    },
  },
  {
    name: 'image edits: multipart_edit',
    operation: IMAGE_EDITS,
    path: '/v1/images/edits',
    form: {
      fields: {
        model: 'gpt-image-1',
        prompt: 'Add a watercolor effect to this image',
        size: '1024x1024',
        quality: 'high',
      },
      files: [{ field: 'image', name: 'image.png', kind: 'image' }],
    },
  },
  {
    name: 'image edits: json_with_url',
    operation: IMAGE_EDITS,
    path: '/v1/images/edits',
    body: {
      model: 'gpt-image-1',
      prompt: 'Add a watercolor effect to this image',
      images: [{ image_url: 'https://example.com/source-image.png' }],
      size: '1024x1024',
      quality: 'high',
    },
  },
  {
    name: 'image edits: json_with_file_id',
    operation: IMAGE_EDITS,
    path: '/v1/images/edits',
    body: {
      model: 'gpt-image-1',
      prompt: 'Replace the background with a snowy mountain scene',
      images: [{ file_id: 'file-abc123' }],
      mask: { file_id: 'file-mask123' },
      output_format: 'png',
      output_compression: 100,
    },
  },
];

export const SPEC_EXAMPLES: SpecExample[] = [...CHAT_EXAMPLES, ...RESPONSES_EXAMPLES, ...MEDIA_EXAMPLES];

/**
 * Spec example requests the gateway refuses on purpose (400 with `param` set): example name -> the doc that
 * documents the refusal and a phrase of it (the test checks the doc contains the phrase).
 */
const RESPONSES_DOC = 'docs/ai-gateway/responses.md';
const ENGINES_DOC = 'docs/ai-gateway/engines.md';
export const REFUSED: Record<string, { doc: string; phrase: string }> = {
  'responses: File input': {
    doc: RESPONSES_DOC,
    phrase: '| `input_file.file_url` | the gateway fetches no files for the model |',
  },
  'responses: Web search': {
    doc: RESPONSES_DOC,
    phrase:
      '| hosted tools (`web_search`, `file_search`, `code_interpreter`, ...) | they run only at OpenAI, unmetered here |',
  },
  'responses: File search': {
    doc: RESPONSES_DOC,
    phrase:
      '| hosted tools (`web_search`, `file_search`, `code_interpreter`, ...) | they run only at OpenAI, unmetered here |',
  },
  'image edits: json_with_url': {
    doc: ENGINES_DOC,
    phrase: "OpenAI's JSON form of an edit, `images` by URL or file id, is refused: 400 with `param: images`",
  },
  'image edits: json_with_file_id': {
    doc: ENGINES_DOC,
    phrase: "OpenAI's JSON form of an edit, `images` by URL or file id, is refused: 400 with `param: images`",
  },
};

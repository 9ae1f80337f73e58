/**
 * Conformance of the gateway's answers to OpenAI's API (the official OpenAPI document, openai/openai-openapi
 * openapi.json 2.3.0): every operation the gateway serves in the OpenAI namespace has its answers validated
 * with ajv against our schemas of it (schemas/): JSON bodies, errors, each streamed event by its type,
 * binary answers by content type; and the spec's own example requests of each served operation
 * (spec-examples.ts) are sent through the fake upstreams: each accepted (2xx), or refused by a decision
 * listed in REFUSED with the line of docs/ai-gateway/ that documents it. The run prints passed / total, per operation.
 * An operation that answers an error where an answer was expected (a 404 where it does not exist) counts
 * as failed checks; nothing here throws before the figure is printed.
 *
 * Relaxation, noted once: the spec's request schema for embeddings `input` gives the examples of its
 * token-array forms as strings ("[1212, 318, 257, 1332, 13]") under array schemas; they are sent here as
 * the arrays the schema describes. The spec's model names, ids, files and URLs are mapped onto this
 * test's gateway as spec-examples.ts lists.
 */
import { readFileSync } from 'fs';
import { join } from 'path';
import sharp from 'sharp';
import { SpeechSynthesisEngine } from '@app/engines';
import { Conformance, sseEvents } from './conformance';
import { GatewayFixture, startGatewayFixture } from '../gateway-fixture';
import { startMediaGateway } from '../media/media-gateway';
import { MediaUpstream, startMediaUpstream } from '../media/media-upstream';
import {
  CHAT,
  COMPLETIONS,
  EMBEDDINGS,
  FormRequest,
  IMAGE_EDITS,
  IMAGES,
  INPUT_ITEMS,
  MODERATIONS,
  REFUSED,
  RESPONSE,
  RESPONSE_DELETE,
  RESPONSES,
  SPEC_EXAMPLES,
  SPEECH,
  STORED_RESPONSE,
  TRANSCRIPTIONS,
  TRANSLATIONS,
} from './spec-examples';

/** A doc of the repository, by its path from the root (REFUSED names where each refusal is documented). */
const doc = (rel: string): string => readFileSync(join(__dirname, '../../..', rel), 'utf8');

interface Answer {
  status: number;
  contentType: string;
  text: string;
  json: unknown;
}

/** Every check of this file: one figure for the whole suite. */
const c = new Conformance();
afterAll(() => {
  // The pass figure per operation: printed on every run (also on old code, where assertions fail).
  console.log(
    `${c.summary()}\n${c.breakdown()}\n${c
      .failed()
      .map((x) => `  FAILED ${x.name}: ${x.problems.slice(0, 3).join('; ')}`)
      .join('\n')}`,
  );
});

describe('OpenAI API conformance (answers and spec example requests)', () => {
  let f: GatewayFixture;
  let media: MediaUpstream;
  let key: string;
  let speechWav: Buffer;
  let photo: Buffer;
  let storedId = '';

  beforeAll(async () => {
    media = await startMediaUpstream();
    // 127.0.0.1 open to the gateway's image fetches: the moderation example's image lives on the media upstream.
    f = await startMediaGateway(media, { AI_MEDIA_FETCH_ALLOWED_CIDRS: '127.0.0.1/32' }, (doc: any) => {
      doc.models['vendor-gpt-4'] = {
        price: { inputPer1k: 1, outputPer1k: 2, audioOutputPer1k: 20, webSearchPerCall: 0.5 },
      };
      doc.mediaModels['gpt-4o-transcribe-diarize'] = { kind: 'transcription', price: 0.02 };
      return doc;
    });
    key = (await f.createKey({ name: 'conformance' })).key;
    speechWav = (
      await SpeechSynthesisEngine.shared().synthesize('The weather is nice today. Please call me tomorrow.', {
        voice: 'en-US-JennyNeural',
        format: 'wav',
      })
    ).audio;
    photo = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#48c' } })
      .png()
      .toBuffer();
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
    await SpeechSynthesisEngine.shared().close();
    delete process.env.FAKE_MEDIA_KEY;
  });

  /** One HTTP call; a connection failure is answered as status 0 (counted as failed checks, never thrown). */
  const send = async (
    method: string,
    path: string,
    body?: Record<string, unknown>,
    form?: FormRequest,
    auth: string | null = key,
  ): Promise<Answer> => {
    try {
      const headers: Record<string, string> = auth ? { authorization: `Bearer ${auth}` } : {};
      let payload: string | FormData | undefined;
      if (form) {
        const data = new FormData();
        for (const [name, value] of Object.entries(form.fields))
          for (const v of Array.isArray(value) ? value : [value]) data.append(name, v);
        for (const file of form.files)
          data.append(
            file.field,
            new Blob([file.kind === 'audio' ? speechWav : photo], {
              type: file.kind === 'audio' ? 'audio/wav' : 'image/png',
            }),
            file.name,
          );
        payload = data;
      } else if (body !== undefined) {
        headers['content-type'] = 'application/json';
        payload = JSON.stringify(body);
      }
      const res = await fetch(`${f.gw.url}${path}`, { method, headers, body: payload });
      const contentType = res.headers.get('content-type') ?? '';
      const text = await res.text();
      return {
        status: res.status,
        contentType,
        text,
        json: contentType.startsWith('text/event-stream') ? undefined : safeJson(text),
      };
    } catch (e) {
      return { status: 0, contentType: '', text: String(e), json: { error: String(e) } };
    }
  };

  /**
   * An answer validated: an event stream event by event (an expected stream that did not come is a failed
   * check), speech audio by its content type, JSON and text by the schema of the operation's
   * `response_format` variant (with `expectOk`, an error answer fails it); with `countStatus`, its being
   * answered 2xx is one more check.
   */
  const validate = (
    operation: string,
    r: Answer,
    label: string,
    expectOk: boolean,
    body?: Record<string, unknown>,
    form?: FormRequest,
    countStatus = expectOk,
  ) => {
    const field = (name: string) => body?.[name] ?? form?.fields[name];
    const streamed = field('stream') === true || field('stream') === 'true' || field('stream_format') === 'sse';
    const format = field('response_format');
    if (r.contentType.startsWith('text/event-stream') || (streamed && expectOk))
      c.stream(operation, r.contentType.startsWith('text/event-stream') ? sseEvents(r.text) : [], label);
    else if (operation === SPEECH && (r.status < 400 || expectOk)) c.binary(operation, r.contentType, /^audio\//);
    else
      c.answer(
        typeof format === 'string' && format !== 'json' && format !== 'b64_json' && format !== 'url'
          ? `${operation}#format:${format}`
          : operation,
        r.status,
        r.json,
        label,
        expectOk,
      );
    if (countStatus)
      c.decided(
        operation,
        `${operation} (${label}) answered 2xx`,
        r.status >= 200 && r.status < 300,
        `status ${r.status}: ${r.text.slice(0, 200)}`,
      );
  };

  const check = async (
    operation: string,
    path: string,
    body: Record<string, unknown> | undefined,
    label: string,
    form?: FormRequest,
  ) => {
    const r = await send(operation.split(' ')[0], path, body, form);
    validate(operation, r, label, true, body, form);
    return r;
  };
  const error = async (
    operation: string,
    path: string,
    body: Record<string, unknown> | undefined,
    label: string,
    auth: string | null = key,
    form?: FormRequest,
  ) => {
    const r = await send(operation.split(' ')[0], path, body, form, auth);
    c.answer(operation, r.status, r.json, label);
    c.decided(operation, `${operation} (${label}) is an error`, r.status >= 400, `status ${r.status}`);
    return r;
  };

  it('validates every answer of chat, completions, embeddings and models, JSON and streamed', async () => {
    const chat = (extra: Record<string, unknown>, model = 'vendor-gpt-4') => ({
      model,
      messages: [{ role: 'user', content: 'Hello there' }],
      ...extra,
    });
    await check('GET /v1/models', '/v1/models', undefined, 'list');
    await check('GET /v1/models/{model}', '/v1/models/vendor-gpt-4', undefined, 'one');
    await check(CHAT, '/v1/chat/completions', chat({}), 'openai');
    await check(CHAT, '/v1/chat/completions', chat({}, 'vendor-claude-3'), 'anthropic');
    await check(CHAT, '/v1/chat/completions', chat({ n: 2 }), 'n=2');
    await check(
      CHAT,
      '/v1/chat/completions',
      chat({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }),
      'audio output',
    );
    const tools = [
      {
        type: 'function',
        function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ];
    await check(CHAT, '/v1/chat/completions', chat({ tools }), 'tool call');
    await check(CHAT, '/v1/chat/completions', chat({ tools, stream: true }), 'tool call stream');
    await check(CHAT, '/v1/chat/completions', chat({ tools }, 'vendor-claude-3'), 'anthropic tool call');
    await check(
      CHAT,
      '/v1/chat/completions',
      chat({ stream: true, stream_options: { include_usage: true } }),
      'stream + usage',
    );
    await check(
      CHAT,
      '/v1/chat/completions',
      chat({ stream: true, stream_options: { include_usage: true } }, 'vendor-claude-3'),
      'anthropic stream',
    );
    await check(COMPLETIONS, '/v1/completions', { model: 'vendor-gpt-4', prompt: 'Say hi', max_tokens: 5 }, 'json');
    await check(
      COMPLETIONS,
      '/v1/completions',
      { model: 'vendor-gpt-4', prompt: 'Say hi', max_tokens: 5, stream: true, stream_options: { include_usage: true } },
      'stream',
    );
    await check(
      EMBEDDINGS,
      '/v1/embeddings',
      { model: 'text-embedding-v3', input: ['a b', 'c'], encoding_format: 'float' },
      'float',
    );
    await check(
      EMBEDDINGS,
      '/v1/embeddings',
      { model: 'text-embedding-v3', input: 'a b', encoding_format: 'base64' },
      'base64',
    );

    // Errors: 400, 401, 403, 404, 429.
    await error(CHAT, '/v1/chat/completions', { model: 'vendor-gpt-4', messages: [] }, '400');
    await error(CHAT, '/v1/chat/completions', chat({}), '401', null);
    const embedOnly = (await f.createKey({ scopes: ['embeddings'] })).key;
    await error(CHAT, '/v1/chat/completions', chat({}), '403', embedOnly);
    await error('GET /v1/models/{model}', '/v1/models/no-such-model', undefined, '404');
    const broke = (await f.createKey({ budget_yuan: 0.000001 })).key;
    await error(CHAT, '/v1/chat/completions', { ...chat({}), max_tokens: 1000 }, '429', broke);

    expect(c.failed()).toEqual([]);
  });

  it('validates every answer of the Responses API: create (JSON, text and tool-call streams), retrieve, input items, delete', async () => {
    const tools = [
      {
        type: 'function',
        name: 'get_weather',
        description: 'Weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        strict: false,
      },
    ];
    for (const model of ['vendor-gpt-4', 'vendor-claude-3']) {
      await check(RESPONSES, '/v1/responses', { model, input: 'one two three' }, `${model} json`);
      await check(
        RESPONSES,
        '/v1/responses',
        { model, instructions: 'Be brief.', input: 'Paris', tools },
        `${model} tool call`,
      );
      await check(RESPONSES, '/v1/responses', { model, input: 'one two three', stream: true }, `${model} stream`);
      await check(
        RESPONSES,
        '/v1/responses',
        { model, input: 'Paris', tools, stream: true },
        `${model} tool-call stream`,
      );
    }
    const created = await send('POST', '/v1/responses', {
      model: 'vendor-gpt-4',
      input: [
        { role: 'user', content: 'Paris' },
        { role: 'assistant', content: 'Weather?' },
        { role: 'user', content: 'yes' },
      ],
      tools,
    });
    const id = String((created.json as { id?: unknown })?.id);
    await check(RESPONSE, `/v1/responses/${id}`, undefined, 'retrieve');
    await check(INPUT_ITEMS, `/v1/responses/${id}/input_items`, undefined, 'first page');
    await check(INPUT_ITEMS, `/v1/responses/${id}/input_items?limit=2&order=asc`, undefined, 'limit + asc');
    await check(RESPONSE_DELETE, `/v1/responses/${id}`, undefined, 'delete');
    await error(RESPONSE, `/v1/responses/${id}`, undefined, 'deleted: 404');
    await error(INPUT_ITEMS, `/v1/responses/resp_nope/input_items`, undefined, 'unknown: 404');
    await error(RESPONSES, '/v1/responses', { model: 'vendor-gpt-4', input: 'hi', background: true }, 'refused: 400');

    expect(c.failed()).toEqual([]);
  });

  it('validates every answer of moderations, translations, transcriptions, speech, image generations and edits', async () => {
    const audio = (fields: Record<string, string | string[]>): FormRequest => ({
      fields,
      files: [{ field: 'file', name: 'speech.wav', kind: 'audio' }],
    });
    const edit = (fields: Record<string, string>): FormRequest => ({
      fields: { model: 'gpt-image-1', prompt: 'add a hat', size: '1024x1024', quality: 'low', ...fields },
      files: [{ field: 'image', name: 'photo.png', kind: 'image' }],
    });
    const dataUrl = `data:image/png;base64,${photo.toString('base64')}`;

    await check(
      MODERATIONS,
      '/v1/moderations',
      { model: 'omni-moderation-latest', input: 'I will kill the process' },
      'string',
    );
    await check(MODERATIONS, '/v1/moderations', { input: ['hello', 'kill', 'bye'] }, 'strings');
    await check(
      MODERATIONS,
      '/v1/moderations',
      {
        input: [
          { type: 'text', text: 'is this fine?' },
          { type: 'image_url', image_url: { url: dataUrl } },
        ],
      },
      'text + image',
    );
    await error(MODERATIONS, '/v1/moderations', { model: 'no-such-moderation', input: 'x' }, 'unknown model: 404');

    for (const format of ['json', 'verbose_json', 'text'])
      await check(
        TRANSLATIONS,
        '/v1/audio/translations',
        undefined,
        format,
        audio({ model: 'whisper-1', response_format: format }),
      );
    for (const format of ['json', 'verbose_json', 'text', 'diarized_json'])
      await check(
        TRANSCRIPTIONS,
        '/v1/audio/transcriptions',
        undefined,
        format,
        audio({ model: 'gpt-4o-transcribe', response_format: format }),
      );
    await check(
      TRANSCRIPTIONS,
      '/v1/audio/transcriptions',
      undefined,
      'verbose_json + words',
      audio({ model: 'whisper-1', response_format: 'verbose_json', 'timestamp_granularities[]': ['word', 'segment'] }),
    );
    await check(
      TRANSCRIPTIONS,
      '/v1/audio/transcriptions',
      undefined,
      'stream',
      audio({ model: 'gpt-4o-transcribe', stream: 'true' }),
    );
    await error(TRANSCRIPTIONS, '/v1/audio/transcriptions', undefined, 'no file: 400', key, {
      fields: { model: 'whisper-1' },
      files: [],
    });

    await check(SPEECH, '/v1/audio/speech', { model: 'gpt-4o-mini-tts', input: 'Hello there.', voice: 'alloy' }, 'mp3');
    await check(
      SPEECH,
      '/v1/audio/speech',
      { model: 'gpt-4o-mini-tts', input: 'Hello there.', voice: 'alloy', response_format: 'wav' },
      'wav',
    );
    await check(
      SPEECH,
      '/v1/audio/speech',
      { model: 'gpt-4o-mini-tts', input: 'Hello there.', voice: 'alloy', response_format: 'wav', stream_format: 'sse' },
      'sse',
    );
    await error(
      SPEECH,
      '/v1/audio/speech',
      { model: 'gpt-4o-mini-tts', input: '', voice: 'alloy' },
      'empty input: 400',
    );

    await check(
      IMAGES,
      '/v1/images/generations',
      { model: 'gpt-image-1', prompt: 'a lighthouse', size: '1024x1024', quality: 'low', response_format: 'b64_json' },
      'b64_json',
    );
    await check(
      IMAGES,
      '/v1/images/generations',
      { model: 'gpt-image-1', prompt: 'a lighthouse', size: '1024x1024', quality: 'low' },
      'url',
    );
    await check(
      IMAGES,
      '/v1/images/generations',
      {
        model: 'gpt-image-1',
        prompt: 'a lighthouse',
        size: '1024x1024',
        quality: 'low',
        stream: true,
        partial_images: 2,
      },
      'stream',
    );
    await check(IMAGE_EDITS, '/v1/images/edits', undefined, 'b64_json', edit({ response_format: 'b64_json' }));
    await check(IMAGE_EDITS, '/v1/images/edits', undefined, 'url', edit({}));
    await check(IMAGE_EDITS, '/v1/images/edits', undefined, 'stream', edit({ stream: 'true', partial_images: '1' }));
    await error(IMAGE_EDITS, '/v1/images/edits', undefined, 'no image: 400', key, {
      fields: { model: 'gpt-image-1', prompt: 'x' },
      files: [],
    });

    expect(c.failed()).toEqual([]);
  });

  it('keeps a response stored for the spec examples of retrieve, input items and delete', async () => {
    const created = await send('POST', '/v1/responses', { model: 'vendor-gpt-4', input: 'Tell me a story.' });
    storedId = String((created.json as { id?: unknown })?.id);
    expect(created.status).toBe(200);
  });

  it.each(SPEC_EXAMPLES.map((e) => [e.name, e] as const))('spec example request %s is accepted', async (name, e) => {
    const path = e.path.replace(STORED_RESPONSE, storedId);
    const body =
      e.body &&
      JSON.parse(
        JSON.stringify(e.body).split('https://example.com/image.png').join(media.url.replace(/\/v1$/, '/image.png')),
      );
    const r = await send(e.operation.split(' ')[0], path, body, e.form);
    const refusal = REFUSED[name];
    validate(e.operation, r, `spec example ${name}`, !refusal, body, e.form, false);
    const ok = refusal
      ? r.status === 400 && !!(r.json as any)?.error?.param && doc(refusal.doc).includes(refusal.phrase)
      : r.status >= 200 && r.status < 300;
    c.decided(
      e.operation,
      `spec example ${name}: ${refusal ? 'refused as documented' : 'accepted'}`,
      ok,
      `status ${r.status}: ${r.text.slice(0, 200)}`,
    );
    expect({ name, status: r.status, body: ok ? '' : r.text.slice(0, 300) }).toEqual({
      name,
      status: refusal ? 400 : r.status,
      body: '',
    });
  });

  it('spec example requests of GET /v1/models and /v1/models/{model} are served', async () => {
    for (const path of ['/v1/models', '/v1/models/vendor-gpt-4']) {
      const r = await send('GET', path);
      c.decided(
        path === '/v1/models' ? 'GET /v1/models' : 'GET /v1/models/{model}',
        `spec example GET ${path}`,
        r.status === 200,
        `status ${r.status}`,
      );
      expect(r.status).toBe(200);
    }
  });
});

// Without a transcription upstream the local engine (PocketSphinx) answers transcriptions itself.
describe("OpenAI API conformance of the local speech engine's transcriptions", () => {
  let f: GatewayFixture;
  let key: string;
  let speechWav: Buffer;

  beforeAll(async () => {
    f = await startGatewayFixture({});
    key = (await f.createKey({ name: 'conformance-local' })).key;
    speechWav = (
      await SpeechSynthesisEngine.shared().synthesize('The weather is nice today. Please call me tomorrow.', {
        voice: 'en-US-JennyNeural',
        format: 'wav',
      })
    ).audio;
  });
  afterAll(async () => {
    await f?.close();
    await SpeechSynthesisEngine.shared().close();
  });

  const transcribe = async (fields: Record<string, string>) => {
    const data = new FormData();
    for (const [k, v] of Object.entries(fields)) data.append(k, v);
    data.append('file', new Blob([speechWav], { type: 'audio/wav' }), 'speech.wav');
    try {
      const res = await fetch(`${f.gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: data,
      });
      return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
    } catch (e) {
      return { status: 0, contentType: '', text: String(e) };
    }
  };

  it('json, verbose_json, text and stream=true answers conform', async () => {
    for (const format of ['json', 'verbose_json', 'text']) {
      const r = await transcribe({ model: 'whisper-1', response_format: format });
      c.answer(
        format === 'json' ? TRANSCRIPTIONS : `${TRANSCRIPTIONS}#format:${format}`,
        r.status,
        safeJson(r.text),
        `local ${format}`,
        true,
      );
    }
    const r = await transcribe({ model: 'whisper-1', stream: 'true' });
    c.stream(TRANSCRIPTIONS, r.contentType.startsWith('text/event-stream') ? sseEvents(r.text) : [], 'local stream');
    expect(c.failed()).toEqual([]);
  });
});

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Conformance of the gateway's answers to OpenAI's API (the official OpenAPI document, openai/openai-openapi
 * openapi.json 2.3.0): every served operation's answers validated with ajv against our schemas of it
 * (schemas/), JSON bodies, errors and each streamed event; and the spec's own example requests of each
 * served operation (its x-oaiMeta examples and request-schema examples, re-typed below as fixtures) sent
 * through the fake upstreams: each accepted (2xx), or refused by a decision listed in REFUSED with the
 * README line that documents it. The run prints passed / total.
 *
 * Relaxation, noted once: the spec's request schema for embeddings `input` gives the examples of its
 * token-array forms as strings ("[1212, 318, 257, 1332, 13]") under array schemas; they are sent here as
 * the arrays the schema describes. The spec's model names (gpt-5.4, text-embedding-ada-002, its
 * VAR_chat_model_id placeholders) are replaced by this gateway's catalog names: it serves only those.
 */
import { Conformance, sseEvents } from './conformance';
import { GatewayFixture, providersDoc, startGatewayFixture } from '../gateway-fixture';

const CHAT = 'POST /v1/chat/completions';
const COMPLETIONS = 'POST /v1/completions';
const EMBEDDINGS = 'POST /v1/embeddings';

/** The spec's example requests (model names mapped to the catalog). */
const SPEC_EXAMPLES: Array<{ name: string; operation: string; path: string; body: Record<string, unknown> }> = [
  { name: 'chat: Default', operation: CHAT, path: '/v1/chat/completions', body: { model: 'vendor-gpt-4', messages: [{ role: 'developer', content: 'You are a helpful assistant.' }, { role: 'user', content: 'Hello!' }] } },
  {
    name: 'chat: Image input',
    operation: CHAT,
    path: '/v1/chat/completions',
    body: {
      model: 'vendor-gpt-4',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this image?' }, { type: 'image_url', image_url: { url: 'https://upload.wikimedia.org/wikipedia/commons/thumb/d/dd/Gfp-wisconsin-madison-the-nature-boardwalk.jpg/2560px-Gfp-wisconsin-madison-the-nature-boardwalk.jpg' } }] }],
      max_tokens: 300,
    },
  },
  { name: 'chat: Streaming', operation: CHAT, path: '/v1/chat/completions', body: { model: 'vendor-gpt-4', messages: [{ role: 'developer', content: 'You are a helpful assistant.' }, { role: 'user', content: 'Hello!' }], stream: true } },
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
            parameters: { type: 'object', properties: { location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['location'] },
          },
        },
      ],
      tool_choice: 'auto',
    },
  },
  { name: 'chat: Logprobs', operation: CHAT, path: '/v1/chat/completions', body: { model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'Hello!' }], logprobs: true, top_logprobs: 2 } },
  { name: 'completions: No streaming', operation: COMPLETIONS, path: '/v1/completions', body: { model: 'vendor-gpt-4', prompt: 'Say this is a test', max_tokens: 7, temperature: 0 } },
  { name: 'completions: Streaming', operation: COMPLETIONS, path: '/v1/completions', body: { model: 'vendor-gpt-4', prompt: 'Say this is a test', max_tokens: 7, temperature: 0, stream: true } },
  { name: 'embeddings: example', operation: EMBEDDINGS, path: '/v1/embeddings', body: { input: 'The food was delicious and the waiter...', model: 'text-embedding-v3', encoding_format: 'float' } },
  { name: 'embeddings: input string', operation: EMBEDDINGS, path: '/v1/embeddings', body: { model: 'text-embedding-v3', input: 'The quick brown fox jumped over the lazy dog' } },
  { name: 'embeddings: input strings', operation: EMBEDDINGS, path: '/v1/embeddings', body: { model: 'text-embedding-v3', input: ['This is a test.'] } },
  { name: 'embeddings: input token array', operation: EMBEDDINGS, path: '/v1/embeddings', body: { model: 'text-embedding-v3', input: [1212, 318, 257, 1332, 13] } },
  { name: 'embeddings: input token arrays', operation: EMBEDDINGS, path: '/v1/embeddings', body: { model: 'text-embedding-v3', input: [[1212, 318, 257, 1332, 13]] } },
  { name: 'embeddings: user', operation: EMBEDDINGS, path: '/v1/embeddings', body: { model: 'text-embedding-v3', input: 'This is a test.', user: 'user-1234', encoding_format: 'base64', dimensions: 256 } },
];

/** Spec example requests the gateway refuses on purpose: name -> the README line documenting the refusal. None today. */
const REFUSED: Record<string, string> = {};

describe('OpenAI API conformance (answers and spec example requests)', () => {
  let f: GatewayFixture;
  let key: string;
  const c = new Conformance();

  beforeAll(async () => {
    f = await startGatewayFixture({}, ({ openai, backup, anthropic }) => {
      const doc = providersDoc(openai, backup, anthropic) as any;
      doc.models['vendor-gpt-4'] = { price: { inputPer1k: 1, outputPer1k: 2, audioOutputPer1k: 20, webSearchPerCall: 0.5 } };
      return doc;
    });
    key = (await f.createKey({ name: 'conformance' })).key;
  });
  afterAll(async () => {
    // The figure the issue asks for: printed on every run (also on old code, where assertions fail).
    console.log(`${c.summary()}\n${c.failed().map((x) => `  FAILED ${x.name}: ${x.problems.slice(0, 3).join('; ')}`).join('\n')}`);
    await f?.close();
  });

  const call = async (method: string, path: string, body?: unknown, auth: string | null = key) => {
    const res = await fetch(`${f.gw.url}${path}`, {
      method,
      headers: { ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const streamed = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
    return { status: res.status, streamed, text, json: streamed ? undefined : safeJson(text) };
  };
  /** One call and its answer validated; with `expectOk`, its being answered 2xx is one more check. */
  const check = async (operation: string, path: string, body: Record<string, unknown> | undefined, label: string, expectOk = true) => {
    const [method] = operation.split(' ');
    const r = await call(method, path, body);
    if (r.streamed) c.stream(operation, sseEvents(r.text), label);
    else c.answer(operation, r.status, r.json, label);
    if (expectOk) c.decided(`${operation} (${label}) answered 2xx`, r.status < 400, `status ${r.status}: ${r.text.slice(0, 200)}`);
    return r;
  };

  it('validates every served operation answer, JSON and streamed', async () => {
    const chat = (extra: Record<string, unknown>, model = 'vendor-gpt-4') => ({ model, messages: [{ role: 'user', content: 'Hello there' }], ...extra });
    await check('GET /v1/models', '/v1/models', undefined, 'list');
    await check('GET /v1/models/{model}', '/v1/models/vendor-gpt-4', undefined, 'one');
    await check(CHAT, '/v1/chat/completions', chat({}), 'openai');
    await check(CHAT, '/v1/chat/completions', chat({}, 'vendor-claude-3'), 'anthropic');
    await check(CHAT, '/v1/chat/completions', chat({ n: 2 }), 'n=2');
    await check(CHAT, '/v1/chat/completions', chat({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }), 'audio output');
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    await check(CHAT, '/v1/chat/completions', chat({ tools }), 'tool call');
    await check(CHAT, '/v1/chat/completions', chat({ tools, stream: true }), 'tool call stream');
    await check(CHAT, '/v1/chat/completions', chat({ tools }, 'vendor-claude-3'), 'anthropic tool call');
    await check(CHAT, '/v1/chat/completions', chat({ stream: true, stream_options: { include_usage: true } }), 'stream + usage');
    await check(CHAT, '/v1/chat/completions', chat({ stream: true, stream_options: { include_usage: true } }, 'vendor-claude-3'), 'anthropic stream');
    await check(COMPLETIONS, '/v1/completions', { model: 'vendor-gpt-4', prompt: 'Say hi', max_tokens: 5 }, 'json');
    await check(COMPLETIONS, '/v1/completions', { model: 'vendor-gpt-4', prompt: 'Say hi', max_tokens: 5, stream: true, stream_options: { include_usage: true } }, 'stream');
    await check(EMBEDDINGS, '/v1/embeddings', { model: 'text-embedding-v3', input: ['a b', 'c'], encoding_format: 'float' }, 'float');
    await check(EMBEDDINGS, '/v1/embeddings', { model: 'text-embedding-v3', input: 'a b', encoding_format: 'base64' }, 'base64');

    // Errors: 400, 401, 403, 404, 429.
    c.answer(CHAT, ...(await statusAndJson(call('POST', '/v1/chat/completions', { model: 'vendor-gpt-4', messages: [] }))), '400');
    c.answer(CHAT, ...(await statusAndJson(call('POST', '/v1/chat/completions', chat({}), null))), '401');
    const embedOnly = (await f.createKey({ scopes: ['embeddings'] })).key;
    c.answer(CHAT, ...(await statusAndJson(call('POST', '/v1/chat/completions', chat({}), embedOnly))), '403');
    c.answer('GET /v1/models/{model}', ...(await statusAndJson(call('GET', '/v1/models/no-such-model'))), '404');
    const broke = (await f.createKey({ budget_yuan: 0.000001 })).key;
    c.answer(CHAT, ...(await statusAndJson(call('POST', '/v1/chat/completions', { ...chat({}), max_tokens: 1000 }, broke))), '429');

    expect(c.failed()).toEqual([]);
  });

  it.each(SPEC_EXAMPLES.map((e) => [e.name, e] as const))('spec example request %s is accepted', async (name, e) => {
    const r = await check(e.operation, e.path, e.body, `spec example ${name}`, false);
    const refusal = REFUSED[name];
    const ok = refusal ? r.status === 400 : r.status >= 200 && r.status < 300;
    c.decided(`spec example ${name}: ${refusal ? 'refused as documented' : 'accepted'}`, ok, `status ${r.status}: ${r.text.slice(0, 200)}`);
    expect({ name, status: r.status, body: ok ? '' : r.text.slice(0, 300) }).toEqual({ name, status: refusal ? 400 : r.status, body: '' });
  });

  it('spec example requests of GET /v1/models and /v1/models/{model} are served', async () => {
    for (const path of ['/v1/models', '/v1/models/vendor-gpt-4']) {
      const r = await call('GET', path);
      c.decided(`spec example GET ${path}`, r.status === 200, `status ${r.status}`);
      expect(r.status).toBe(200);
    }
  });
});

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function statusAndJson(p: Promise<{ status: number; json: unknown }>): Promise<[number, unknown]> {
  const r = await p;
  return [r.status, r.json];
}

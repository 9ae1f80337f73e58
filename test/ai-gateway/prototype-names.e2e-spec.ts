// A client's `model` (and voice) named like an Object.prototype member must be as unknown as any other
// name: the catalogs were object literals, so `constructor`, `__proto__`, `toString`... found Object's
// members and the gateway answered 400 "constructor is not a chat model" instead of 404 model_not_found.
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];

describe('AI gateway: names like Object.prototype members are unknown names', () => {
  let f: GatewayFixture;
  let key: string;

  beforeAll(async () => {
    f = await startGatewayFixture();
    ({ key } = await f.createKey({ name: 'prototype-names' }));
  });
  afterAll(() => f?.close());

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${f.gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  const postForm = async (path: string, fields: Record<string, string>) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    const res = await fetch(`${f.gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    return { status: res.status, body: await res.json() };
  };

  const jsonRoutes: Array<[string, (model: string) => unknown]> = [
    ['/v1/chat/completions', (model) => ({ model, messages: [{ role: 'user', content: 'x' }] })],
    ['/v1/completions', (model) => ({ model, prompt: 'x' })],
    ['/v1/embeddings', (model) => ({ model, input: 'x' })],
    ['/v1/responses', (model) => ({ model, input: 'x' })],
  ];

  it.each(jsonRoutes)('%s: such a model is 404 model_not_found, as an unknown one', async (path, body) => {
    const reference = await post(path, body('gpt-7'));
    expect(reference.status).toBe(404);
    expect(reference.body.error).toMatchObject({ code: 'model_not_found', param: 'model' });
    for (const model of PROTOTYPE_NAMES) {
      const res = await post(path, body(model));
      expect([model, res.status, res.body.error?.code, res.body.error?.param]).toEqual([
        model,
        404,
        'model_not_found',
        'model',
      ]);
    }
    expect(f.openai.requests).toHaveLength(0);
  });

  it('/v1/audio/transcriptions and /v1/images/generations: such a model is 404 model_not_found', async () => {
    for (const model of PROTOTYPE_NAMES) {
      const transcription = await postForm('/v1/audio/transcriptions', { model });
      expect([model, transcription.status, transcription.body.error?.code]).toEqual([model, 404, 'model_not_found']);
      const image = await post('/v1/images/generations', { model, prompt: 'a lighthouse' });
      expect([model, image.status, image.body.error?.code]).toEqual([model, 404, 'model_not_found']);
    }
  });

  it('GET /v1/models/{model}: 404 for such a name; an OpenAI speech voice named so is a 400', async () => {
    for (const model of PROTOTYPE_NAMES) {
      const res = await fetch(`${f.gw.url}/v1/models/${encodeURIComponent(model)}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect([model, res.status, (await res.json()).error?.code]).toEqual([model, 404, 'model_not_found']);
      const speech = await post('/v1/audio/speech', { model: 'tts-1', input: 'x', voice: model });
      expect([model, speech.status, speech.body.error?.param]).toEqual([model, 400, 'voice']);
    }
  });
});

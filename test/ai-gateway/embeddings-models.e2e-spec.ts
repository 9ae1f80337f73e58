import { randomUUID } from 'crypto';
import OpenAI from 'openai';
import { fakeEmbedding } from '../support/upstreams';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';
import { until } from '../support/until';

describe('AI gateway embeddings and models (openai SDK)', () => {
  // Texts are unique per run: the embeddings cache may be a Redis shared with earlier runs.
  const run = randomUUID().slice(0, 8);
  let f: GatewayFixture;
  let client: OpenAI;

  beforeAll(async () => {
    f = await startGatewayFixture();
    const { key } = await f.createKey({ name: 'emb-test' });
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => f?.close());
  beforeEach(() => {
    f.openai.requests.length = 0;
  });

  it('returns float vectors in input order', async () => {
    const res = await client.embeddings.create({
      model: 'text-embedding-v3',
      input: [`alpha one ${run}`, `beta ${run}`],
      encoding_format: 'float',
    });
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    expect(res.data[0].embedding).toHaveLength(1536);
    expect(res.data[0].embedding[0]).toBeCloseTo(fakeEmbedding(`alpha one ${run}`, 1536)[0], 12);
    expect(res.data[1].embedding[5]).toBeCloseTo(fakeEmbedding(`beta ${run}`, 1536)[5], 12);
    expect(res.usage).toEqual({ prompt_tokens: 5, total_tokens: 5 });
  });

  it('returns base64 (float32) that the SDK decodes, by default and on request', async () => {
    // The SDK asks for base64 when no format is given and decodes it itself.
    const res = await client.embeddings.create({ model: 'text-embedding-v3', input: `gamma delta ${run}` });
    expect(res.data[0].embedding).toHaveLength(1536);
    expect(res.data[0].embedding[3]).toBeCloseTo(fakeEmbedding(`gamma delta ${run}`, 1536)[3], 6);
    const raw = await fetch(`${f.gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${(client as any).apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'text-embedding-v3-small',
        input: `eps ${run}`,
        encoding_format: 'base64',
        dimensions: 64,
      }),
    });
    const body = await raw.json();
    expect(typeof body.data[0].embedding).toBe('string');
    const floats = new Float32Array(new Uint8Array(Buffer.from(body.data[0].embedding, 'base64')).buffer);
    expect(floats).toHaveLength(64);
    expect(floats[0]).toBeCloseTo(fakeEmbedding(`eps ${run}`, 64)[0], 6);
    expect(raw.headers.get('x-gateway-overhead-ms')).toMatch(/^\d+(\.\d+)?$/);
  });

  it('serves repeated texts from the cache without calling the upstream again', async () => {
    const text = `cached text ${Date.now()}`;
    const first = await client.embeddings.create({
      model: 'text-embedding-v3',
      input: [text, `fresh-1 ${run}`],
      encoding_format: 'float',
    });
    expect(f.openai.requests).toHaveLength(1);
    expect(f.openai.requests[0].body.input).toEqual([text, `fresh-1 ${run}`]);
    const second = await client.embeddings.create({
      model: 'text-embedding-v3',
      input: [`fresh-2 ${run}`, text],
      encoding_format: 'float',
    });
    expect(f.openai.requests).toHaveLength(2);
    expect(f.openai.requests[1].body.input).toEqual([`fresh-2 ${run}`]);
    expect(second.data[1].embedding).toEqual(first.data[0].embedding);
    await client.embeddings.create({ model: 'text-embedding-v3', input: text, encoding_format: 'float' });
    expect(f.openai.requests).toHaveLength(2);
  });

  it('refuses an input over 8192 tokens, a bad dimension and a chat model', async () => {
    const long: any = await client.embeddings
      .create({ model: 'text-embedding-v3', input: ['ok', 'tok '.repeat(9000)] })
      .catch((e) => e);
    expect(long).toBeInstanceOf(OpenAI.BadRequestError);
    expect(long.error).toMatchObject({ param: 'input', code: 'context_length_exceeded' });
    expect(long.message).toContain('input[1]');
    const dims: any = await client.embeddings
      .create({ model: 'text-embedding-v3-small', input: 'x', dimensions: 1024 })
      .catch((e) => e);
    expect(dims.error).toMatchObject({ param: 'dimensions' });
    const empty: any = await client.embeddings.create({ model: 'text-embedding-v3', input: '' }).catch((e) => e);
    expect(empty.error).toMatchObject({ param: 'input' });
    const chat: any = await client.embeddings.create({ model: 'vendor-gpt-4', input: 'x' }).catch((e) => e);
    expect(chat.status).toBe(400);
    expect(f.openai.requests).toHaveLength(0);
  });

  it('lists the models this key may use', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids.sort()).toEqual([
      'text-embedding-v3',
      'text-embedding-v3-small',
      'vendor-claude-3',
      'vendor-gpt-4',
      'vendor-gpt-4-mini',
    ]);
    const one = await client.models.retrieve('vendor-claude-3');
    expect(one).toMatchObject({ id: 'vendor-claude-3', object: 'model', owned_by: 'vendor' });
    await expect(client.models.retrieve('nope')).rejects.toBeInstanceOf(OpenAI.NotFoundError);

    const { key } = await f.createKey({ name: 'limited', models: ['vendor-gpt-4-mini', 'text-embedding-v3'] });
    const limited = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    const allowed: string[] = [];
    for await (const m of limited.models.list()) allowed.push(m.id);
    expect(allowed.sort()).toEqual(['text-embedding-v3', 'vendor-gpt-4-mini']);
    await expect(limited.models.retrieve('vendor-gpt-4')).rejects.toBeInstanceOf(OpenAI.NotFoundError);

    const { key: embOnly } = await f.createKey({ name: 'embeddings only', scopes: ['embeddings'] });
    const embClient = new OpenAI({ apiKey: embOnly, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    const embIds: string[] = [];
    for await (const m of embClient.models.list()) embIds.push(m.id);
    expect(embIds.sort()).toEqual(['text-embedding-v3', 'text-embedding-v3-small']);
  });

  describe('vectors in flight per key (AI_EMBEDDINGS_MAX_VECTOR_BYTES_PER_KEY)', () => {
    let g: GatewayFixture;
    beforeAll(async () => {
      // 1536 dimensions x 4 bytes x 2 inputs = 12 288 bytes a call: one call of a key at a time.
      g = await startGatewayFixture({ AI_EMBEDDINGS_MAX_VECTOR_BYTES_PER_KEY: '16384' });
    });
    afterAll(() => g?.close());

    it("a key's second bulk call waits for its first one's vectors while another key's call goes on; all are answered", async () => {
      const a = (await g.createKey({ name: 'bulk-a' })).key;
      const b = (await g.createKey({ name: 'bulk-b' })).key;
      let release!: () => void;
      g.openai.behaviour.holdEmbeddings = new Promise<void>((r) => (release = r));
      const call = (key: string, text: string) =>
        fetch(`${g.gw.url}/v1/embeddings`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'text-embedding-v3', input: [`${text} one ${run}`, `${text} two ${run}`] }),
        });
      const upstreamCalls = () =>
        g.openai.requests.filter((r) => r.path === '/v1/embeddings').map((r) => r.body.input[0]);
      const a1 = call(a, 'a1');
      await until(() => upstreamCalls().length === 1);
      const a2 = call(a, 'a2');
      const b1 = call(b, 'b1');
      await until(() => upstreamCalls().includes(`b1 one ${run}`));
      // Key b's call, sent after a2, reached the upstream beside a1; a2 waits for a1's bytes.
      expect(upstreamCalls().sort()).toEqual([`a1 one ${run}`, `b1 one ${run}`]);
      release();
      const answers = await Promise.all([a1, a2, b1]);
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(upstreamCalls().sort()).toEqual([`a1 one ${run}`, `a2 one ${run}`, `b1 one ${run}`]);
      g.openai.behaviour.holdEmbeddings = undefined;
    });
  });
});

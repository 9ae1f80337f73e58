import OpenAI from 'openai';
import { LOCAL_EMBEDDINGS_ENGINE, TextEmbeddingEngine } from '@app/engines';
import { Tokenizer } from '../../../apps/ai-gateway/src/tokenizer/tokenizer';
import { GatewayFixture, providersDoc, startGatewayFixture } from '../gateway-fixture';

const cosine = (a: number[], b: number[]) => {
  let dot = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
};

describe('/v1/embeddings served by the local engine (providers file type: local)', () => {
  let f: GatewayFixture;
  let client: OpenAI;

  beforeAll(async () => {
    f = await startGatewayFixture({}, ({ openai, backup, anthropic }) => {
      const doc = providersDoc(openai, backup, anthropic) as any;
      doc.models['local-use-lite-en'] = {
        kind: 'embeddings',
        dimensions: 512,
        price: { inputPer1k: 0, outputPer1k: 0 },
      };
      doc.deployments.push({
        name: 'in-process',
        type: 'local',
        engine: LOCAL_EMBEDDINGS_ENGINE,
        models: ['local-use-lite-en'],
      });
      return doc;
    });
    client = new OpenAI({ apiKey: (await f.createKey({ name: 'emb' })).key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await f?.close();
    await TextEmbeddingEngine.shared().close();
  });

  it('answers 512-dimension English embeddings through the openai SDK', async () => {
    const started = Date.now();
    const res = await client.embeddings.create({
      model: 'local-use-lite-en',
      input: ['The cat sits on the mat.', 'A kitten rests on a rug.', 'Interest rates rose again.'],
    });
    console.log(`local embeddings over HTTP (first call, model load included): ${Date.now() - started} ms`);
    expect(res.data.map((d) => d.embedding.length)).toEqual([512, 512, 512]);
    const [cat, kitten, rates] = res.data.map((d) => d.embedding);
    expect(cosine(cat, kitten)).toBeGreaterThan(cosine(cat, rates) + 0.2);
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
    expect(f.openai.requests).toEqual([]); // nothing went upstream
  });

  it('decodes token arrays with the model encoding for the local engine (it takes text only)', async () => {
    // cl100k_base ids of "The cat sits on the mat." (js-tiktoken); the engine must see that text.
    const ids = [791, 8415, 23874, 389, 279, 5634, 13];
    const [byIds, byText] = await Promise.all([
      client.embeddings.create({ model: 'local-use-lite-en', input: [ids], encoding_format: 'float' }),
      client.embeddings.create({
        model: 'local-use-lite-en',
        input: 'The cat sits on the mat.',
        encoding_format: 'float',
      }),
    ]);
    expect(cosine(byIds.data[0].embedding, byText.data[0].embedding)).toBeCloseTo(1, 5);
    expect(byIds.usage.prompt_tokens).toBe(ids.length);
  });

  it('counts decoded token arrays by the text the engine embeds when it has more tokens than the ids', async () => {
    // 9208 is "typename" in cl100k_base: 20 of them decode to one 160-letter word the encoding
    // splits into far more tokens, the work the engine does and what is billed (not the 20 ids).
    const res = await client.embeddings.create({
      model: 'local-use-lite-en',
      input: [new Array(20).fill(9208)],
      encoding_format: 'float',
    });
    expect(res.data[0].embedding).toHaveLength(512);
    const counted = f.gw.app.get(Tokenizer).count('typename'.repeat(20), 'cl100k_base');
    expect(counted).toBeGreaterThan(60);
    expect(res.usage.prompt_tokens).toBe(counted);
  });
});

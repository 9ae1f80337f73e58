/**
 * `/v1/embeddings` with token-array inputs (`integer[]`, `integer[][]`, as OpenAI's API reference and
 * LangChain's OpenAIEmbeddings send them): forwarded as they are to OpenAI-type deployments, counted
 * and billed by their length, cached apart from texts, checked against the model's encoding, and
 * refused naming the deployment where a text-only deployment cannot be given their text.
 */
import OpenAI from 'openai';
import { Client } from 'pg';
import { LOCAL_EMBEDDINGS_ENGINE } from '@app/engines';
import { LedgerRepository } from '../../apps/ai-gateway/src/usage/ledger.repository';
import { sqlClient } from '../support/database';
import { fakeEmbedding } from '../support/upstreams';
import { GatewayFixture, providersDoc, startGatewayFixture } from './gateway-fixture';

describe('/v1/embeddings token arrays (openai SDK)', () => {
  let f: GatewayFixture;
  let db: Client;
  let client: OpenAI;
  let key: { id: string; key: string };
  // Ids unique per run: the embeddings cache may outlive a run on a shared Redis.
  const salt = Date.now() % 90_000;

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
        models: ['local-use-lite-en', 'mixed-embedding'],
      });
      // One model in a pool of the OpenAI-type primary and the local engine, the local one the heavier.
      doc.models['mixed-embedding'] = { kind: 'embeddings', dimensions: 512, price: { inputPer1k: 1, outputPer1k: 0 } };
      doc.deployments.find((d: any) => d.name === 'primary').models.push('mixed-embedding');
      doc.deployments.find((d: any) => d.name === 'in-process').weight = 9;
      return doc;
    });
    db = await sqlClient(f.gw.dbUrl);
    key = await f.createKey({ name: 'emb-tokens' });
    client = new OpenAI({ apiKey: key.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await db?.end();
    await f?.close();
  });
  beforeEach(() => f.openai.reset());

  const billed = async (): Promise<Array<{ prompt_tokens: number; cost_yuan: string; status: string }>> => {
    await f.gw.app.get(LedgerRepository).flush();
    const { rows } = await db.query(
      `SELECT prompt_tokens, cost_yuan, status FROM ai_usage_records WHERE key_id = $1 AND endpoint = 'embeddings' ORDER BY id`,
      [key.id],
    );
    return rows;
  };

  it('forwards token arrays as they are, counts and bills their length, and keys the cache by the ids', async () => {
    const a = [1 + salt, 2, 3];
    const b = [4 + salt, 5];
    const before = (await billed()).length;
    const res = await client.embeddings.create({ model: 'text-embedding-v3', input: [a, b], encoding_format: 'float' });
    expect(f.openai.requests).toHaveLength(1);
    expect(f.openai.requests[0].body.input).toEqual([a, b]);
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    expect(res.data[1].embedding[7]).toBeCloseTo(fakeEmbedding(`ids:${b.join(',')}`, 1536)[7], 12);
    expect(res.usage).toEqual({ prompt_tokens: 5, total_tokens: 5 });

    // One token array: one input, sent as one; the first pair is served from the cache.
    const one = await client.embeddings.create({ model: 'text-embedding-v3', input: a, encoding_format: 'float' });
    expect(one.data).toHaveLength(1);
    expect(one.data[0].embedding).toEqual(res.data[0].embedding);
    expect(f.openai.requests).toHaveLength(1);

    // The text "1,2,3" is not the token array [1, 2, 3]: never served from its entry.
    await client.embeddings.create({ model: 'text-embedding-v3', input: a.join(','), encoding_format: 'float' });
    expect(f.openai.requests).toHaveLength(2);
    expect(f.openai.requests[1].body.input).toEqual([a.join(',')]);

    const rows = (await billed()).slice(before);
    // text-embedding-v3 costs 1 yuan per 1000 tokens in the fixture: 5 ids are 0.005 yuan.
    expect(rows[0]).toMatchObject({ prompt_tokens: 5, cost_yuan: '0.0050000000', status: 'ok' });
    expect(rows[1]).toMatchObject({ prompt_tokens: 3, status: 'cached' });
  });

  it('answers a token array in base64 as the SDK decodes it by default', async () => {
    const res = await client.embeddings.create({ model: 'text-embedding-v3', input: [7 + salt, 8, 9] });
    expect(res.data[0].embedding).toHaveLength(1536);
    expect(res.data[0].embedding[2]).toBeCloseTo(fakeEmbedding(`ids:${[7 + salt, 8, 9].join(',')}`, 1536)[2], 6);
  });

  it('refuses bad ids naming the input, before any upstream call', async () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [
        [
          [1, 2],
          [3, -1],
        ],
        'input[1]',
        /integer >= 0/,
      ],
      [[[1, 2], []], 'input[1]', /non-empty/],
      [[1, 2.5], 'input[1]', /integer >= 0/],
      [[[1], 'text'], 'input[1]', /non-empty array of token ids/],
      [
        [
          [1, 2],
          [3, 100_276 + 50_000],
        ],
        'input[1]',
        /not a token of text-embedding-v3's encoding cl100k_base/,
      ],
      [[5, 200_000], 'input', /not a token/],
      [[new Array(8193).fill(1)], 'input', /input\[0\] has 8193 tokens/],
      [Array.from({ length: 40 }, () => new Array(8000).fill(11)), 'input', /320000 tokens in all; at most 300000/],
    ];
    for (const [input, param, message] of cases) {
      const e: any = await client.embeddings
        .create({ model: 'text-embedding-v3', input: input as number[][] })
        .catch((x) => x);
      expect({ input: JSON.stringify(input).slice(0, 40), status: e.status, param: e.error?.param }).toEqual({
        input: JSON.stringify(input).slice(0, 40),
        status: 400,
        param,
      });
      expect(e.error.message).toMatch(message);
    }
    expect(f.openai.requests).toHaveLength(0);
  });

  it('refuses, naming the deployment, ids a text-only deployment cannot be given as text', async () => {
    // 163 is the first byte of the three tokens of "猫" in cl100k_base: half a character, no text.
    const e: any = await client.embeddings
      .create({ model: 'local-use-lite-en', input: [[15339, 1917], [163]] })
      .catch((x) => x);
    expect(e.status).toBe(400);
    expect(e.error).toMatchObject({ param: 'input[1]', code: 'unsupported_parameter' });
    expect(e.error.message).toContain('deployment in-process (type local) takes text only');
  });

  it('sends token arrays to the OpenAI-type deployment of a pool that also has a text-only one', async () => {
    // [163] has no text (half a character): only the deployment taking ids can serve it, every time.
    for (let k = 0; k < 8; k++) {
      const res = await client.embeddings.create({
        model: 'mixed-embedding',
        input: [[163, k + salt]],
        encoding_format: 'float',
      });
      expect(res.data).toHaveLength(1);
    }
    expect(f.openai.requests.map((r) => r.body.input)).toEqual(Array.from({ length: 8 }, (_, k) => [[163, k + salt]]));
  });

  it('refuses ids that decode to whitespace only, and whitespace text, for the local engine with a 400 naming the input', async () => {
    // 220 is " " in cl100k_base: whole text, but nothing the engine can embed.
    const e: any = await client.embeddings
      .create({
        model: 'local-use-lite-en',
        input: [
          [15339, 1917],
          [220, 220],
        ],
      })
      .catch((x) => x);
    expect(e.status).toBe(400);
    expect(e.error).toMatchObject({ param: 'input[1]' });
    expect(e.error.message).toContain('deployment in-process (type local)');
    expect(e.error.message).toMatch(/whitespace/);
    // The same text sent as text reaches the engine, whose refusal is the caller's bad input.
    const t: any = await client.embeddings
      .create({ model: 'local-use-lite-en', input: ['fine', '   '] })
      .catch((x) => x);
    expect(t.status).toBe(400);
    expect(t.error).toMatchObject({ param: 'input', code: 'invalid_value' });
    expect(f.openai.requests).toHaveLength(0);
  });
});

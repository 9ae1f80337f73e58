// POST /v1/completions (legacy text completions) through the official openai SDK: passed to the
// OpenAI-type fake upstream's /v1/completions, reserved with the exact max_tokens, metered.
import OpenAI from 'openai';
import { GatewayFixture, resetUpstreams, startGatewayFixture } from './gateway-fixture';
import { ledgerRows } from './media/ledger';
import { queryRows as query } from '../support/database';

describe('AI gateway /v1/completions (openai SDK)', () => {
  let f: GatewayFixture;
  let client: OpenAI;
  const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 10_000 });

  beforeAll(async () => {
    f = await startGatewayFixture();
    client = sdk((await f.createKey({ name: 'completions-test' })).key);
  });
  afterAll(() => f?.close());
  beforeEach(() => resetUpstreams(f));

  it('passes a completion to the upstream /completions with max_tokens 16 by default', async () => {
    const res = await client.completions.create({ model: 'vendor-gpt-4', prompt: 'hello there', temperature: 0.2 });
    expect(res).toMatchObject({
      object: 'text_completion',
      model: 'vendor-gpt-4',
      choices: [{ text: 'Echo: hello there', index: 0, finish_reason: 'stop' }],
    });
    expect(res.usage).toEqual({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
    expect(f.openai.requests).toHaveLength(1);
    expect(f.openai.requests[0].path).toBe('/v1/completions');
    expect(f.openai.requests[0].body).toMatchObject({
      model: 'gpt-4o',
      prompt: 'hello there',
      temperature: 0.2,
      max_tokens: 16,
    });
    expect(f.openai.requests[0].body.max_completion_tokens).toBeUndefined();
  });

  it('streams chunks with usage on request, the limit sent exactly, then [DONE]', async () => {
    const stream = await client.completions.create({
      model: 'vendor-gpt-4',
      prompt: 'one two three four',
      max_tokens: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
    const parts: string[] = [];
    let usage;
    let finish;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.text) parts.push(chunk.choices[0].text);
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(parts.join('')).toBe('Echo: one two ');
    expect(finish).toBe('length');
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 });
    expect(f.openai.requests[0].body).toMatchObject({
      max_tokens: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('reserves max_tokens for every generation before the call and meters the ledger as completions', async () => {
    const { id, key } = await f.createKey({ budget_yuan: 0.05 });
    // Hold: prompt (1 token, with margin: 18) at 1 yuan/1k + max_tokens × n at 2 yuan/1k.
    const first = await sdk(key).completions.create({ model: 'vendor-gpt-4', prompt: 'a', max_tokens: 10 });
    expect(first.choices[0].text).toBe('Echo: a');
    // 0.018 + 3 × 10 × 0.002 = 0.078 does not fit in what is left (0.05 - 0.005).
    const refused: any = await sdk(key)
      .completions.create({ model: 'vendor-gpt-4', prompt: 'a', max_tokens: 10, n: 3 })
      .catch((e) => e);
    expect(refused.status).toBe(429);
    expect(refused.error.code).toBe('insufficient_quota');
    expect(f.openai.requests).toHaveLength(1);
    await ledgerRows(f.gw.dbUrl, 'completions', 1, 0, id);
    const rows = await query(
      f.gw.dbUrl,
      `SELECT endpoint, model, status, prompt_tokens, completion_tokens FROM ai_usage_records WHERE key_id = $1`,
      [id],
    );
    expect(rows).toEqual([
      { endpoint: 'completions', model: 'vendor-gpt-4', status: 'ok', prompt_tokens: 1, completion_tokens: 2 },
    ]);
    const k = (await f.admin('GET', `/admin/keys/${id}`)).body;
    expect(k).toMatchObject({ reserved_yuan: 0 });
    expect(k.spent_yuan).toBeCloseTo(0.001 + 0.004, 8);
  });

  it('refuses a model served only by an Anthropic deployment, and a bad prompt, with 400 naming the field', async () => {
    const anthropicOnly: any = await client.completions
      .create({ model: 'vendor-claude-3', prompt: 'hi' })
      .catch((e) => e);
    expect(anthropicOnly.status).toBe(400);
    expect(anthropicOnly.error).toMatchObject({ param: 'model', code: 'model_not_supported' });
    const noPrompt: any = await client.completions.create({ model: 'vendor-gpt-4' } as any).catch((e) => e);
    expect(noPrompt.status).toBe(400);
    expect(noPrompt.error.param).toBe('prompt');
    const zero: any = await client.completions
      .create({ model: 'vendor-gpt-4', prompt: 'hi', max_tokens: 0 })
      .catch((e) => e);
    expect(zero.status).toBe(400);
    expect(zero.error.param).toBe('max_tokens');
    expect(f.openai.requests).toHaveLength(0);
    expect(f.anthropic.requests).toHaveLength(0);
  });
});

/**
 * Chat audio output (`modalities: ["text", "audio"]`, `audio`) and `web_search_options`: served and
 * metered for models whose providers-file price declares them (audio tokens from the upstream's usage
 * details, a search call once), held at their worst case, refused with a 400 naming the field and the
 * price to declare for the others. Through the openai SDK and the fake OpenAI upstream.
 */
import OpenAI from 'openai';
import { Client } from 'pg';
import { LedgerRepository } from '../../apps/ai-gateway/src/usage/ledger.repository';
import { sqlClient } from '../support/database';
import { AUDIO_TOKENS_PER_TEXT_TOKEN } from '../support/upstreams/fake-upstream';
import { GatewayFixture, providersDoc, startGatewayFixture } from './gateway-fixture';

const PRICE = { inputPer1k: 1, outputPer1k: 2, audioInputPer1k: 4, audioOutputPer1k: 20, webSearchPerCall: 0.5 };

describe('chat audio output and web search, metered where priced (openai SDK)', () => {
  let f: GatewayFixture;
  let db: Client;

  beforeAll(async () => {
    f = await startGatewayFixture({}, ({ openai, backup, anthropic }) => {
      const doc = providersDoc(openai, backup, anthropic) as any;
      doc.models['vendor-gpt-4'] = { price: PRICE };
      return doc;
    });
    db = await sqlClient(f.gw.dbUrl);
  });
  afterAll(async () => {
    await db?.end();
    await f?.close();
  });
  beforeEach(() => f.openai.reset());

  const clientFor = async (fields: Record<string, unknown> = {}) => {
    const k = await f.createKey(fields);
    return { id: k.id, client: new OpenAI({ apiKey: k.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 }) };
  };
  const ledger = async (keyId: string) => {
    await f.gw.app.get(LedgerRepository).flush();
    const { rows } = await db.query(
      `SELECT prompt_tokens, completion_tokens, cost_yuan, status FROM ai_usage_records WHERE key_id = $1 ORDER BY id`,
      [keyId],
    );
    return rows.map((r) => ({ ...r, cost: Number(r.cost_yuan) }));
  };
  const audioCost = (u: { prompt_tokens: number; completion_tokens: number }, audio: number) =>
    (u.prompt_tokens * PRICE.inputPer1k +
      (u.completion_tokens - audio) * PRICE.outputPer1k +
      audio * PRICE.audioOutputPer1k) /
    1000;

  it('answers audio output with message.audio and bills the audio tokens at the audio price', async () => {
    const { id, client } = await clientFor();
    const res = await client.chat.completions.create({
      model: 'vendor-gpt-4',
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'wav' },
      messages: [{ role: 'user', content: 'say hello' }],
    });
    expect(f.openai.requests[0].body).toMatchObject({
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'wav' },
    });
    const audio = res.choices[0].message.audio!;
    expect(audio).toEqual({
      id: expect.stringMatching(/^audio_/),
      data: expect.any(String),
      expires_at: expect.any(Number),
      transcript: 'Echo: say hello',
    });
    const audioTokens = res.usage!.completion_tokens_details!.audio_tokens!;
    expect(audioTokens).toBe(3 * AUDIO_TOKENS_PER_TEXT_TOKEN);
    expect(res.usage!.prompt_tokens_details).toEqual({ cached_tokens: 0, audio_tokens: 0 });
    const [row] = await ledger(id);
    expect(row).toMatchObject({
      prompt_tokens: res.usage!.prompt_tokens,
      completion_tokens: res.usage!.completion_tokens,
      status: 'ok',
    });
    expect(row.cost).toBeCloseTo(audioCost(res.usage!, audioTokens), 10);
  });

  it('streams audio deltas and the usage with its audio token details', async () => {
    const { id, client } = await clientFor();
    const stream = await client.chat.completions.create({
      model: 'vendor-gpt-4',
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'stream me' }],
    });
    let transcript = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { audio?: { transcript?: string } } | undefined;
      transcript += delta?.audio?.transcript ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(transcript).toBe('Echo: stream me');
    const audioTokens = usage!.completion_tokens_details!.audio_tokens!;
    expect(audioTokens).toBe(3 * AUDIO_TOKENS_PER_TEXT_TOKEN);
    const [row] = await ledger(id);
    expect(row.cost).toBeCloseTo(audioCost(usage!, audioTokens), 10);
  });

  it('bills completion tokens at the audio price when the upstream omits the audio token details', async () => {
    const { id, client } = await clientFor();
    f.openai.behaviour.audioWithoutDetails = true;
    try {
      const res = await client.chat.completions.create({
        model: 'vendor-gpt-4',
        modalities: ['text', 'audio'],
        audio: { voice: 'alloy', format: 'wav' },
        messages: [{ role: 'user', content: 'say hello' }],
      });
      expect(res.usage!.completion_tokens).toBe(3 + 3 * AUDIO_TOKENS_PER_TEXT_TOKEN);
      // What is billed is what the answer says: every completion token as audio.
      expect(res.usage!.completion_tokens_details).toMatchObject({ audio_tokens: res.usage!.completion_tokens });
      const [row] = await ledger(id);
      expect(row.cost).toBeCloseTo(audioCost(res.usage!, res.usage!.completion_tokens), 10);
    } finally {
      f.openai.behaviour.audioWithoutDetails = undefined;
    }
  });

  it('forwards web_search_options and bills the search call once on top of the tokens', async () => {
    const { id, client } = await clientFor();
    const res = await client.chat.completions.create({
      model: 'vendor-gpt-4',
      n: 2,
      web_search_options: { search_context_size: 'low' },
      messages: [{ role: 'user', content: 'news today' }],
    });
    expect(f.openai.requests[0].body.web_search_options).toEqual({ search_context_size: 'low' });
    const [row] = await ledger(id);
    const tokens =
      (res.usage!.prompt_tokens * PRICE.inputPer1k + res.usage!.completion_tokens * PRICE.outputPer1k) / 1000;
    expect(row.cost).toBeCloseTo(tokens + PRICE.webSearchPerCall, 10);
  });

  it('holds completion tokens at the audio price and the search fee before the call', async () => {
    // 100 completion tokens: 0.2 yuan at the text price, 2 yuan at the audio price; the key has 1.
    const { client } = await clientFor({ budget_yuan: 1 });
    const ask = (extra: Record<string, unknown>) =>
      client.chat.completions
        .create({
          model: 'vendor-gpt-4',
          max_completion_tokens: 100,
          messages: [{ role: 'user', content: 'hi' }],
          ...extra,
        } as any)
        .then(
          () => 200,
          (e) => `${e.status} ${e.error?.code}`,
        );
    expect(await ask({})).toBe(200);
    expect(await ask({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } })).toBe(
      '429 insufficient_quota',
    );
    const { client: small } = await clientFor({ budget_yuan: 0.4 });
    const askSmall = (extra: Record<string, unknown>) =>
      small.chat.completions
        .create({
          model: 'vendor-gpt-4',
          max_completion_tokens: 10,
          messages: [{ role: 'user', content: 'hi' }],
          ...extra,
        } as any)
        .then(
          () => 200,
          (e) => `${e.status} ${e.error?.code}`,
        );
    expect(await askSmall({ web_search_options: {} })).toBe('429 insufficient_quota'); // 0.5 yuan per search
    expect(await askSmall({})).toBe(200);
  });

  it('holds the prompt at the audio input price when it carries input_audio parts', async () => {
    // 100 s of mp3 at the counted floor (1000 B/s, 50 tokens/s): about 5000 prompt tokens, held with a
    // margin at ~5.5 yuan at the text price and ~22 yuan at audioInputPer1k (4); the key has 10.
    const audio = {
      type: 'input_audio',
      input_audio: { data: Buffer.alloc(100_000, 7).toString('base64'), format: 'mp3' },
    };
    const { client } = await clientFor({ budget_yuan: 10 });
    const ask = (content: unknown, extra: Record<string, unknown>) =>
      client.chat.completions
        .create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content }], ...extra } as any)
        .then(
          () => 200,
          (e) => `${e.status} ${e.error?.code}`,
        );
    const asText = [{ type: 'text', text: 'x'.repeat(20_000) }]; // about as many text tokens: held at the text price
    expect(await ask(asText, { max_completion_tokens: 10 })).toBe(200);
    expect(await ask([{ type: 'text', text: 'transcribe' }, audio], { max_completion_tokens: 10 })).toBe(
      '429 insufficient_quota',
    );
    // No max_completion_tokens: what the budget affords after the prompt is priced the same way.
    expect(await ask([{ type: 'text', text: 'transcribe' }, audio], {})).toBe('429 insufficient_quota');
    expect(f.openai.requests).toHaveLength(1);
  });

  it('refuses both for a model without those prices: 400, param set, naming the price to declare', async () => {
    const { client } = await clientFor();
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [
        { web_search_options: { search_context_size: 'low' } },
        'web_search_options',
        'models.vendor-gpt-4-mini.price.webSearchPerCall',
      ],
      [
        { modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } },
        'modalities',
        'models.vendor-gpt-4-mini.price.audioOutputPer1k',
      ],
      [{ audio: { voice: 'alloy', format: 'wav' } }, 'audio', 'models.vendor-gpt-4-mini.price.audioOutputPer1k'],
    ];
    for (const [extra, param, declare] of cases) {
      const e: any = await client.chat.completions
        .create({ model: 'vendor-gpt-4-mini', messages: [{ role: 'user', content: 'hi' }], ...extra } as any)
        .catch((x) => x);
      expect({ status: e.status, param: e.error?.param, code: e.error?.code }).toEqual({
        status: 400,
        param,
        code: 'unsupported_parameter',
      });
      expect(e.error.message).toContain(`the operator must declare ${declare} in the providers file`);
    }
    expect(f.openai.requests).toHaveLength(0);
  });
});

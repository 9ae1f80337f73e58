// Security of the gateway's text endpoints: no tokenizer freeze, the completion limit sent upstream is the
// one reserved, the embeddings cache is scoped per key (docs/operations/threat-model.md).
import { randomUUID } from 'crypto';
import { Tokenizer } from '../../apps/ai-gateway/src/tokenizer/tokenizer';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

jest.setTimeout(120_000);

describe('gateway text endpoints: security', () => {
  let f: GatewayFixture;
  const run = randomUUID().slice(0, 8);

  beforeAll(async () => {
    f = await startGatewayFixture({ AI_COMPLETION_RESERVE_TOKENS: '50' });
  });
  afterAll(() => f?.close());
  beforeEach(() => {
    f.openai.reset();
    f.anthropic.reset();
    f.openai.behaviour.apiKey = 'sk-upstream-openai';
    f.anthropic.behaviour.apiKey = 'sk-upstream-anthropic';
  });

  async function post(key: string, path: string, body: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${f.gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
    };
  }

  describe('H1: counting tokens of any body stays linear and never holds the event loop', () => {
    // Letters, CJK, emoji, symbols and more classes are covered by routing/tokenizer.spec.ts in work units.
    const RUNS: Record<string, string> = {
      'U+00A0': '\u00a0',
      'U+3000': '\u3000',
      newlines: '\n',
      spaces: ' ',
      mixed: ' \u00a0\n\u3000a字😀!',
    };

    it('answers long runs of one character (the audit 65 536 x U+00A0 body) in chat and embeddings bodies, lean and full path, for a key without budget left', async () => {
      const { key } = await f.createKey({ name: 'h1-broke', budget_yuan: 0.000001 });
      for (const [name, unit] of Object.entries(RUNS)) {
        // The audit's body: 65 536 x U+00A0 (25 s of event loop before the fix); the other runs are shorter.
        const text = unit.repeat(Math.ceil((name === 'U+00A0' ? 65_536 : 16_384) / unit.length));
        // Lean path (as API clients send it) and full pipeline (an Origin header always takes it).
        for (const headers of [{}, { origin: 'https://site.example' }] as Record<string, string>[]) {
          const chat = await post(
            key,
            '/v1/chat/completions',
            { model: 'vendor-gpt-4', messages: [{ role: 'user', content: text }] },
            headers,
          );
          // Counted, then refused by the budget check that comes after it.
          expect({ name, status: chat.status, code: chat.body?.error?.code }).toEqual({
            name,
            status: 429,
            code: 'insufficient_quota',
          });
        }
        const emb = await post(key, '/v1/embeddings', { model: 'text-embedding-v3', input: text });
        expect({ name, status: emb.status, error: typeof emb.body?.error?.message }).toEqual({
          name,
          status: emb.status === 429 ? 429 : 400,
          error: 'string',
        });
      }
      expect(f.openai.requests).toHaveLength(0);
    });

    it('answers liveness while a multi-megabyte body is being counted', async () => {
      const { key } = await f.createKey({ name: 'h1-live' });
      const tokenizer = f.gw.app.get(Tokenizer);
      const yieldsBefore = tokenizer.yields;
      // 1.1 M characters: 20 runs of 50 000 spaces and 4 of 25 000 U+00A0 (one piece each before the fix).
      const messages = Array.from({ length: 24 }, (_, i) => ({
        role: i % 2 ? 'assistant' : 'user',
        content: i % 6 === 5 ? '\u00a0'.repeat(25_000) : ' '.repeat(50_000),
      }));
      const big = post(key, '/v1/chat/completions', { model: 'vendor-claude-3', max_tokens: 5, messages });
      let done = false;
      const answer = big.finally(() => (done = true));
      // Liveness answers that arrived while the gateway was inside the count (it had given way at least
      // once, and the big request was not answered yet).
      let during = 0;
      while (!done) {
        const res = await fetch(`${f.gw.url}/actuator/health/liveness`);
        expect(res.status).toBe(200);
        await res.text();
        if (!done && tokenizer.yields > yieldsBefore) during++;
      }
      const res = await answer;
      expect(res.status).toBe(200);
      expect(f.anthropic.requests).toHaveLength(1);
      // One turn given to the event loop per 16 384 characters counted.
      expect(tokenizer.yields - yieldsBefore).toBeGreaterThanOrEqual(60);
      expect(during).toBeGreaterThan(0);
    });
  });

  describe('H3: the upstream gets exactly the completion limit that was reserved', () => {
    const hi = [{ role: 'user', content: 'hi' }];

    it('OpenAI-type upstream: the reserved limit under the one name the deployment honours (max_tokens here), whatever the caller sent (lean, full and streaming)', async () => {
      // The fake honours only max_tokens (as older OpenAI-compatible servers do) and refuses both at once (as OpenAI does).
      f.openai.behaviour.honoursLimit = 'max_tokens';
      const { key } = await f.createKey({ name: 'h3-openai' });
      const cases: Array<[Record<string, unknown>, number]> = [
        [{ max_completion_tokens: 7 }, 7],
        [{ max_completion_tokens: 7, max_tokens: 100_000 }, 7],
        [{ max_tokens: 9 }, 9],
        [{}, 50],
        [{ stream: true, max_completion_tokens: 3, max_tokens: 100_000 }, 3],
        [{ stream: true }, 50],
      ];
      for (const [fields, reserved] of cases) {
        for (const headers of [{}, { origin: 'https://site.example' }] as Record<string, string>[]) {
          f.openai.requests.length = 0;
          const res = await post(
            key,
            '/v1/chat/completions',
            { model: 'vendor-gpt-4', messages: hi, ...fields },
            headers,
          );
          expect(res.status).toBe(200);
          expect({
            fields,
            forwarded: {
              max_tokens: f.openai.requests[0].body.max_tokens,
              max_completion_tokens: f.openai.requests[0].body.max_completion_tokens,
            },
          }).toEqual({
            fields,
            forwarded: { max_tokens: reserved, max_completion_tokens: undefined },
          });
        }
      }
    });

    it('Anthropic-type upstream: max_tokens is the reserved limit, the configured default when the caller sent none', async () => {
      const { key } = await f.createKey({ name: 'h3-anthropic' });
      const cases: Array<[Record<string, unknown>, number]> = [
        [{}, 50],
        [{ stream: true }, 50],
        [{ max_completion_tokens: 7, max_tokens: 100_000 }, 7],
        [{ max_tokens: 9 }, 9],
      ];
      for (const [fields, reserved] of cases) {
        f.anthropic.requests.length = 0;
        const res = await post(key, '/v1/chat/completions', { model: 'vendor-claude-3', messages: hi, ...fields });
        expect(res.status).toBe(200);
        expect({ fields, max_tokens: f.anthropic.requests[0].body.max_tokens }).toEqual({
          fields,
          max_tokens: reserved,
        });
      }
    });

    // Also with max_completion_tokens: 1, tool definitions and image parts, and tool-call
    // answers (the fake truncates the call's arguments at the limit it honours).
    const ROUNDS: Array<[string, Record<string, unknown>, number, number]> = [
      ['text, limit 5', { messages: hi, max_completion_tokens: 5, max_tokens: 100_000 }, 5, 0.2],
      [
        'tools and an image, limit 1',
        {
          max_completion_tokens: 1,
          tools: [
            {
              type: 'function',
              function: {
                name: 'lookup',
                description: 'Looks a word up',
                parameters: { type: 'object', properties: { word: { type: 'string' } } },
              },
            },
          ],
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'w '.repeat(10) },
                { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
              ],
            },
          ],
        },
        1,
        // About 0.2 yuan held per call (prompt hold with tools and image, 1 completion token): a few calls fit.
        0.6,
      ],
    ];
    it.each(ROUNDS)(
      'a low-budget key with 20 concurrent calls cannot spend beyond what it reserved (%s)',
      async (name, fields, limit, budget) => {
        // The upstream honours only max_tokens (as older OpenAI-compatible servers do: max_completion_tokens
        // is ignored) and would write 200 words.
        f.openai.behaviour.honoursLimit = 'max_tokens';
        f.openai.behaviour.reply = 'w '.repeat(200).trim();
        f.openai.behaviour.delayMs = 30;
        const { id, key } = await f.createKey({ name: `h3-race-${name}`, budget_yuan: budget });
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            post(key, '/v1/chat/completions', { model: 'vendor-gpt-4', ...fields, ...(i % 2 ? { stream: true } : {}) }),
          ),
        );
        expect(
          results.filter(
            (r) => r.status !== 200 && !(r.status === 429 && r.body?.error?.code === 'insufficient_quota'),
          ),
        ).toEqual([]);
        const ok = results.filter((r) => r.status === 200).length;
        expect(ok).toBeGreaterThan(0);
        const k = (await f.admin('GET', `/admin/keys/${id}`)).body;
        expect(k.reserved_yuan).toBe(0);
        expect(k.spent_yuan).toBeLessThanOrEqual(budget);
        const usage = await (
          await fetch(`${f.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })
        ).json();
        expect(usage.data[0].completion_tokens).toBeLessThanOrEqual(ok * limit);
        for (const req of f.openai.requests)
          expect({ max_tokens: req.body.max_tokens, max_completion_tokens: req.body.max_completion_tokens }).toEqual({
            max_tokens: limit,
            max_completion_tokens: undefined,
          });
      },
    );
  });

  describe('L4: the embeddings cache is scoped to the calling key', () => {
    it('key B embedding a text key A embedded is a cache miss (upstream called, usage billed); A still hits its own entry', async () => {
      const a = await f.createKey({ name: 'l4-a' });
      const b = await f.createKey({ name: 'l4-b' });
      const input = `private text of tenant A ${run}`;
      const first = await post(a.key, '/v1/embeddings', { model: 'text-embedding-v3', input });
      expect(first.status).toBe(200);
      expect(f.openai.requests).toHaveLength(1);
      const other = await post(b.key, '/v1/embeddings', { model: 'text-embedding-v3', input });
      expect(other.status).toBe(200);
      expect(f.openai.requests).toHaveLength(2);
      expect(other.body.usage.prompt_tokens).toBeGreaterThan(0);
      const again = await post(a.key, '/v1/embeddings', { model: 'text-embedding-v3', input });
      expect(again.status).toBe(200);
      expect(f.openai.requests).toHaveLength(2); // A's own entry is still served from the cache
      const usageB = await (
        await fetch(`${f.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${b.key}` } })
      ).json();
      expect(usageB.data).toEqual([expect.objectContaining({ endpoint: 'embeddings', requests: 1 })]);
    });
  });
  describe('bodies larger in structure than their route takes are refused before they are parsed', () => {
    const members = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 1]));

    it('a body of more than 10 000 object members is 413 on a route validated by its DTO (one of a million keys held the event loop for seconds)', async () => {
      const { key } = await f.createKey({ name: 'members-completions' });
      const over = await post(key, '/v1/completions', {
        model: 'vendor-gpt-4',
        prompt: 'hi',
        logit_bias: members(10_000),
      });
      expect(over).toEqual({
        status: 413,
        body: {
          error: {
            message: 'Request body has more than 10000 objects, arrays and object members',
            type: 'invalid_request_error',
            code: 'payload_too_large',
            param: null,
          },
        },
      });
      // Five million empty objects were two members: every object and array counts.
      const objects = await post(key, '/v1/completions', {
        model: 'vendor-gpt-4',
        prompt: 'hi',
        zz: Array.from({ length: 20_000 }, () => ({})),
      });
      expect([objects.status, objects.body.error.code]).toEqual([413, 'payload_too_large']);
      // Under the limit the body is parsed and validated: the DTO's own rule answers.
      const under = await post(key, '/v1/completions', {
        model: 'vendor-gpt-4',
        prompt: 'hi',
        logit_bias: members(2000),
      });
      expect(under.status).toBe(400);
      expect(under.body.error.message).toMatch(/logit_bias.*at most 1024 entries/);
      expect(f.openai.requests).toHaveLength(0);
    });

    it('a chat body may hold a structured-output schema of 20 000 properties, not a body of more than 65 536 members', async () => {
      const { key } = await f.createKey({ name: 'members-chat' });
      const chat = (properties: Record<string, unknown>) =>
        post(key, '/v1/chat/completions', {
          model: 'vendor-gpt-4',
          messages: [{ role: 'user', content: 'hi' }],
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'wide', schema: { type: 'object', properties } },
          },
        });
      expect((await chat(members(20_000))).status).toBe(200);
      expect(f.openai.requests).toHaveLength(1);
      const over = await chat(members(70_000));
      expect([over.status, over.body.error.code, over.body.error.message]).toEqual([
        413,
        'payload_too_large',
        'Request body has more than 65536 objects, arrays and object members',
      ]);
      expect(f.openai.requests).toHaveLength(1);
    });

    it('a body of more than 2^20 array items is refused 413 before parsing; batched completions prompts are not', async () => {
      const { key } = await f.createKey({ name: 'items' });
      // 8 MiB of one-digit numbers: some 4 million items, ~130 ms of JSON.parse on the event loop.
      const over = await post(key, '/v1/embeddings', { model: 'no-such-model', input: 'hi', zz: Array(4e6).fill(1) });
      expect([over.status, over.body.error.code, over.body.error.message]).toEqual([
        413,
        'payload_too_large',
        'Request body has more than 1048576 array items and object members',
      ]);
      // Legacy completions take batched token-array prompts (9 of 120 000 ids here, past 2^20 items): parsed and
      // checked by their own rules, bounded by the body's size.
      const prompt = await post(key, '/v1/completions', {
        model: 'no-such-model',
        prompt: Array.from({ length: 9 }, () => Array(120_000).fill(1)),
      });
      expect([prompt.status, prompt.body.error.code]).toEqual([404, 'model_not_found']);
      expect(f.openai.requests).toHaveLength(0);
    });

    it('a body of many unknown fields is 400 naming 20 of them and counting the rest', async () => {
      const { key } = await f.createKey({ name: 'members-unknown' });
      const res = await post(key, '/v1/completions', { model: 'vendor-gpt-4', prompt: 'hi', ...members(5000) });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/^k0: property k0 should not exist; .*; 4980 more invalid fields$/);
      expect(res.body.error.message.split('; ')).toHaveLength(21);
    });
  });
});

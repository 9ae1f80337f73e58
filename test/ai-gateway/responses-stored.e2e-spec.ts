// Stored responses read back through the official openai SDK (retrieve, delete, inputItems.list with
// auto-pagination), usage breakdowns from both upstream protocols, every answer and stream event
// validated with ajv against our schemas of the spec (conformance/schemas/responses.ts), and the
// unknown-field policy and documented refusals of POST /v1/responses.
import Ajv2020 from 'ajv/dist/2020';
import OpenAI from 'openai';
import { GatewayFixture, providersDoc, resetUpstreams, startGatewayFixture, weatherTool } from './gateway-fixture';
import {
  deletedResponseSchema,
  inputItemListSchema,
  responseObjectSchema,
  responseStreamEventSchemas,
} from './conformance/schemas/responses';
import { queryRows as query } from '../support/database';
import { FakeClock } from '../support/clock';

const ajv = new Ajv2020({ allErrors: true, strict: false });
const validators = {
  response: ajv.compile(responseObjectSchema),
  deleted: ajv.compile(deletedResponseSchema),
  list: ajv.compile(inputItemListSchema),
  events: Object.fromEntries(
    Object.entries(responseStreamEventSchemas).map(([type, schema]) => [type, ajv.compile(schema)]),
  ),
};

/** The schema errors of `value` (empty when it conforms), so a failure shows what is wrong. */
function problems(validate: ReturnType<typeof ajv.compile>, value: unknown): unknown[] {
  return validate(value)
    ? []
    : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

/** Every event validated against the schema of its type (an event of a type we have no schema for fails). */
function eventProblems(events: any[]): unknown[] {
  return events.flatMap((e) => {
    const validate = validators.events[e.type];
    return validate
      ? problems(validate, e).map((p) => `${e.type}: ${String(p)}`)
      : [`no schema for event type ${e.type}`];
  });
}

describe('AI gateway /v1/responses: stored responses, usage details, events (openai SDK, ajv)', () => {
  let f: GatewayFixture;
  let key: string;
  let client: OpenAI;
  const raw = async (method: string, path: string, apiKey = key, body?: unknown) => {
    const res = await fetch(`${f.gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: await res.json() };
  };

  beforeAll(async () => {
    f = await startGatewayFixture({}, ({ openai, backup, anthropic }) => {
      const doc = providersDoc(openai, backup, anthropic);
      // An OpenAI-compatible deployment whose upstream refuses unknown fields.
      Object.assign(doc.deployments[1], { weight: 1, unknownFields: 'drop' });
      return doc;
    });
    key = (await f.createKey({ name: 'responses-stored' })).key;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
  });
  afterAll(() => f?.close());
  beforeEach(() => resetUpstreams(f));

  describe('usage details', () => {
    it('OpenAI upstream: cached and reasoning tokens reach input/output_tokens_details, answered and streamed (and chat keeps its own details)', async () => {
      f.openai.behaviour.usageDetails = { cachedTokens: 2, reasoningTokens: 1 };
      const res = await client.responses.create({ model: 'vendor-gpt-4', input: 'alpha beta gamma' });
      expect(res.usage).toEqual({
        input_tokens: 4,
        input_tokens_details: { cached_tokens: 2, cache_write_tokens: 0 },
        output_tokens: 4,
        output_tokens_details: { reasoning_tokens: 1 },
        total_tokens: 8,
      });
      expect(problems(validators.response, res)).toEqual([]);

      const events: any[] = [];
      for await (const e of await client.responses.create({
        model: 'vendor-gpt-4',
        input: 'alpha beta gamma',
        stream: true,
      }))
        events.push(e);
      expect(events[events.length - 1]).toMatchObject({
        type: 'response.completed',
        response: {
          usage: {
            input_tokens_details: { cached_tokens: 2, cache_write_tokens: 0 },
            output_tokens_details: { reasoning_tokens: 1 },
          },
        },
      });
      expect(eventProblems(events)).toEqual([]);

      const chat = await client.chat.completions.create({
        model: 'vendor-gpt-4',
        messages: [{ role: 'user', content: 'alpha' }],
      });
      expect(chat.usage).toMatchObject({
        prompt_tokens_details: { cached_tokens: 2 },
        completion_tokens_details: { reasoning_tokens: 1 },
      });
    });

    it('Anthropic upstream: cache reads and writes are cached_tokens and cache_write_tokens (inside input_tokens), answered and streamed', async () => {
      f.anthropic.behaviour.usageDetails = { cachedTokens: 3, cacheWriteTokens: 4 };
      const res = await client.responses.create({ model: 'vendor-claude-3', input: 'alpha beta' });
      expect(res.usage?.input_tokens_details).toEqual({ cached_tokens: 3, cache_write_tokens: 4 });
      expect(res.usage?.output_tokens_details).toEqual({ reasoning_tokens: 0 });
      // The cache tokens are part of the input tokens, as at OpenAI (Anthropic counts them apart).
      const plain = await (async () => {
        f.anthropic.behaviour.usageDetails = undefined;
        return client.responses.create({ model: 'vendor-claude-3', input: 'alpha beta' });
      })();
      expect(res.usage!.input_tokens).toBe(plain.usage!.input_tokens + 7);
      expect(plain.usage?.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 0 });
      expect(problems(validators.response, res)).toEqual([]);

      f.anthropic.behaviour.usageDetails = { cachedTokens: 3, cacheWriteTokens: 4 };
      const final = await client.responses.stream({ model: 'vendor-claude-3', input: 'alpha beta' }).finalResponse();
      expect(final.usage?.input_tokens_details).toEqual({ cached_tokens: 3, cache_write_tokens: 4 });
    });
  });

  describe('stream events conform to the spec', () => {
    for (const model of ['vendor-gpt-4', 'vendor-claude-3']) {
      it(`text and tool-call streams on ${model}: every event validates; output_text parts carry logprobs`, async () => {
        for (const body of [
          { model, input: 'one two three', stream: true as const },
          { model, input: 'Paris', tools: [weatherTool], stream: true as const },
        ]) {
          const events: any[] = [];
          for await (const e of await client.responses.create(body)) events.push(e);
          expect(eventProblems(events)).toEqual([]);
          for (const e of events.filter(
            (x) => x.type === 'response.content_part.added' || x.type === 'response.content_part.done',
          ))
            expect(e.part.logprobs).toEqual([]);
        }
      });
    }

    it('a stream broken mid-way: error and response.failed validate too', async () => {
      f.openai.behaviour.dropAfterChunks = 1;
      const res = await fetch(`${f.gw.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'vendor-gpt-4', input: 'one two three four', stream: true }),
      });
      const events = (await res.text())
        .split('\n\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)));
      expect(events.map((e) => e.type).slice(-2)).toEqual(['error', 'response.failed']);
      expect(eventProblems(events)).toEqual([]);
    });
  });

  describe('GET /v1/responses/{id}', () => {
    it('answers the stored Response object as it was answered (JSON and streamed creations)', async () => {
      const created = (
        await raw('POST', '/v1/responses', key, {
          model: 'vendor-gpt-4',
          instructions: 'Be brief.',
          input: 'Paris',
          tools: [weatherTool],
          max_output_tokens: 40,
          metadata: { run: '1' },
        })
      ).body;
      const retrieved = await raw('GET', `/v1/responses/${created.id}`);
      expect(retrieved).toEqual({ status: 200, body: created });
      expect(problems(validators.response, retrieved.body)).toEqual([]);
      // The SDK's retrieve reads the same object.
      expect(await client.responses.retrieve(created.id)).toMatchObject({
        id: created.id,
        status: 'completed',
        usage: created.usage,
        tools: created.tools,
        metadata: { run: '1' },
      });

      const events: any[] = [];
      for await (const e of await client.responses.create({
        model: 'vendor-claude-3',
        input: 'hello there',
        stream: true,
      }))
        events.push(e);
      const streamed = events[events.length - 1].response;
      const again = (await raw('GET', `/v1/responses/${streamed.id}`)).body;
      // What response.completed carried.
      expect(again).toEqual(streamed);
      expect(again).toMatchObject({ status: 'completed', model: 'vendor-claude-3', store: true });
      expect(problems(validators.response, again)).toEqual([]);
      expect(f.openai.requests).toHaveLength(1);
    });

    it('another key, an expired response, a store: false one and an unknown id are the same 404; stream=true is a 400 naming stream', async () => {
      const created = await client.responses.create({ model: 'vendor-gpt-4', input: 'hi' });
      const stranger = (await f.createKey({ name: 'responses-stranger' })).key;
      const other = await raw('GET', `/v1/responses/${created.id}`, stranger);
      expect(other.status).toBe(404);
      expect(other.body.error).toEqual({
        message: `Response with id '${created.id}' not found.`,
        type: 'invalid_request_error',
        code: 'not_found',
        param: 'response_id',
      });
      const unknownId = 'resp_' + 'a'.repeat(48);
      expect(await raw('GET', `/v1/responses/${unknownId}`)).toEqual({
        status: 404,
        body: { error: { ...other.body.error, message: `Response with id '${unknownId}' not found.` } },
      });
      const notStored = await client.responses.create({ model: 'vendor-gpt-4', input: 'hi', store: false });
      expect((await raw('GET', `/v1/responses/${notStored.id}`)).status).toBe(404);
      expect((await raw('GET', `/v1/responses/${encodeURIComponent('resp_\u0000x')}`)).status).toBe(404);
      const sdkError: any = await client.responses.retrieve(unknownId).catch((e) => e);
      expect(sdkError).toBeInstanceOf(OpenAI.NotFoundError);

      const streamed = await raw('GET', `/v1/responses/${created.id}?stream=true`);
      expect(streamed.status).toBe(400);
      expect(streamed.body.error).toMatchObject({ param: 'stream', code: 'unsupported_parameter' });
      expect(
        (await raw('GET', `/v1/responses/${created.id}?stream=false&include[]=message.output_text.logprobs`)).status,
      ).toBe(200);

      await query(f.gw.dbUrl, `UPDATE ai_responses SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        created.id,
      ]);
      expect((await raw('GET', `/v1/responses/${created.id}`)).status).toBe(404);
    });

    it('needs the chat scope', async () => {
      const created = await client.responses.create({ model: 'vendor-gpt-4', input: 'hi' });
      const embeddingsOnly = (await f.createKey({ scopes: ['embeddings'] })).key;
      expect((await raw('GET', `/v1/responses/${created.id}`, embeddingsOnly)).status).toBe(403);
      expect((await raw('DELETE', `/v1/responses/${created.id}`, embeddingsOnly)).status).toBe(403);
      expect((await raw('GET', `/v1/responses/${created.id}/input_items`, embeddingsOnly)).status).toBe(403);
    });
  });

  describe('DELETE /v1/responses/{id}', () => {
    const keyBytes = async (responseKey: string) => {
      const [row] = await query(
        f.gw.dbUrl,
        `SELECT u.bytes::int AS counted, coalesce((SELECT sum(bytes)::int FROM ai_responses r WHERE r.key_id = u.key_id), 0) AS stored
           FROM ai_response_store_usage u JOIN ai_api_keys k ON k.id = u.key_id WHERE k.id = $1`,
        [responseKey],
      );
      return row as { counted: number; stored: number };
    };

    it("deletes the response and its items, frees its bytes from the key's quota in the same transaction, and is scoped to the key", async () => {
      const { id: keyId, key: own } = await f.createKey({ name: 'responses-delete' });
      const sdk = new OpenAI({ apiKey: own, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      const kept = await sdk.responses.create({ model: 'vendor-gpt-4', input: 'keep me' });
      const doomed = await sdk.responses.create({ model: 'vendor-gpt-4', input: 'Paris', tools: [weatherTool] });
      const call = doomed.output.find((o) => o.type === 'function_call') as any;
      const before = await keyBytes(keyId);
      expect(before.counted).toBe(before.stored);

      // Another key cannot delete it (the same 404 as an unknown id), and it stays.
      const stranger = (await f.createKey({ name: 'responses-delete-stranger' })).key;
      expect((await raw('DELETE', `/v1/responses/${doomed.id}`, stranger)).status).toBe(404);
      expect((await query(f.gw.dbUrl, `SELECT 1 FROM ai_responses WHERE id = $1`, [doomed.id])).length).toBe(1);

      const deleted = await raw('DELETE', `/v1/responses/${doomed.id}`, own);
      expect(deleted).toEqual({ status: 200, body: { id: doomed.id, object: 'response', deleted: true } });
      expect(problems(validators.deleted, deleted.body)).toEqual([]);
      const after = await keyBytes(keyId);
      expect(after.counted).toBe(after.stored);
      expect(after.counted).toBeLessThan(before.counted);
      expect(await query(f.gw.dbUrl, `SELECT 1 FROM ai_response_items WHERE response_id = $1`, [doomed.id])).toEqual(
        [],
      );

      // Gone for every use: retrieve, a second delete, previous_response_id and item_reference.
      expect((await raw('GET', `/v1/responses/${doomed.id}`, own)).status).toBe(404);
      expect(await sdk.responses.delete(doomed.id).catch((e) => e)).toBeInstanceOf(OpenAI.NotFoundError);
      const follow: any = await sdk.responses
        .create({ model: 'vendor-gpt-4', previous_response_id: doomed.id, input: 'more' })
        .catch((e) => e);
      expect(follow.error).toMatchObject({ param: 'previous_response_id' });
      const refer: any = await sdk.responses
        .create({
          model: 'vendor-gpt-4',
          input: [
            { role: 'user', content: 'Paris' },
            { type: 'item_reference', id: call.id },
          ],
        })
        .catch((e) => e);
      expect(refer.error).toMatchObject({ param: 'input[1]' });
      // The other response of the key is untouched; the SDK's delete succeeds on it.
      await sdk.responses.delete(kept.id);
      expect(await keyBytes(keyId)).toEqual({ counted: 0, stored: 0 });
    });
  });

  describe('GET /v1/responses/{id}/input_items', () => {
    /** 45 input items: user and assistant turns, then a function call and its output. */
    const longInput = (): any[] => {
      const items: any[] = [];
      for (let i = 0; i < 21; i++)
        items.push({ role: 'user', content: `question ${i}` }, { role: 'assistant', content: `answer ${i}` });
      items.push(
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather in ' },
            { type: 'input_text', text: 'Paris?' },
          ],
        },
        { type: 'function_call', call_id: 'call_x', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_x', output: 'sunny' },
      );
      return items;
    };

    it("pages through more than 20 items with the SDK's auto-pagination, last item first by default, ids stable", async () => {
      const input = longInput();
      const created = await client.responses.create({ model: 'vendor-gpt-4', input });
      const listed: any[] = [];
      for await (const item of client.responses.inputItems.list(created.id)) listed.push(item);
      expect(listed).toHaveLength(45);
      expect(listed[0]).toMatchObject({
        type: 'function_call_output',
        call_id: 'call_x',
        output: 'sunny',
        status: 'completed',
        id: expect.stringMatching(/^fco_/),
      });
      expect(listed[1]).toMatchObject({
        type: 'function_call',
        call_id: 'call_x',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        id: expect.stringMatching(/^fc_/),
      });
      expect(listed[2]).toMatchObject({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'Weather in Paris?' }],
      });
      expect(listed[3]).toMatchObject({
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'answer 20', annotations: [], logprobs: [] }],
      });
      expect(listed[44]).toMatchObject({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'question 0' }],
      });
      expect(new Set(listed.map((i) => i.id)).size).toBe(45);

      // Pages: 20 + 20 + 5 by default; asc with a limit walks the other way; the same ids every time.
      const first = await client.responses.inputItems.list(created.id);
      expect(first.data).toHaveLength(20);
      expect(first.has_more).toBe(true);
      const second = await first.getNextPage();
      expect(second.data).toHaveLength(20);
      const third = await second.getNextPage();
      expect(third.data).toHaveLength(5);
      expect(third.has_more).toBe(false);
      expect(third.hasNextPage()).toBe(false);
      const asc: any[] = [];
      for await (const item of client.responses.inputItems.list(created.id, { order: 'asc', limit: 7 })) asc.push(item);
      expect(asc.map((i) => i.id)).toEqual([...listed].reverse().map((i) => i.id));

      // Each page conforms, first_id / last_id name its ends.
      const page = await raw(
        'GET',
        `/v1/responses/${created.id}/input_items?limit=3&order=asc&include[]=message.input_image.image_url`,
      );
      expect(page.status).toBe(200);
      expect(problems(validators.list, page.body)).toEqual([]);
      expect(page.body).toMatchObject({ object: 'list', first_id: asc[0].id, last_id: asc[2].id, has_more: true });
      const afterLast = await raw('GET', `/v1/responses/${created.id}/input_items?after=${listed[44].id}`);
      expect(afterLast.body).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
      expect(problems(validators.list, afterLast.body)).toEqual([]);
    });

    it("lists what was forwarded: previous_response_id's items first, references expanded; ids belong to their response", async () => {
      const first = await client.responses.create({ model: 'vendor-gpt-4', input: 'Paris', tools: [weatherTool] });
      const call = first.output.find((o) => o.type === 'function_call') as any;
      const second = await client.responses.create({
        model: 'vendor-gpt-4',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'rain' }],
        tools: [weatherTool],
      });
      const items = (await client.responses.inputItems.list(second.id, { order: 'asc' })).data as any[];
      expect(items.map((i) => i.type)).toEqual(['message', 'function_call', 'function_call_output']);
      expect(items[1]).toMatchObject({ call_id: call.call_id, name: 'get_weather', arguments: call.arguments });
      const firstItems = (await client.responses.inputItems.list(first.id)).data;
      // An id of another response's list is no cursor here.
      const foreign = await raw('GET', `/v1/responses/${second.id}/input_items?after=${firstItems[0].id}`);
      expect(foreign.status).toBe(400);
      expect(foreign.body.error.param).toBe('after');
    });

    it("refuses a bad limit, order or after with 400 naming it; another key's or an unknown response is 404", async () => {
      const created = await client.responses.create({ model: 'vendor-gpt-4', input: 'hi' });
      for (const [q, param] of [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=abc', 'limit'],
        ['order=up', 'order'],
        ['after=msg_1', 'after'],
        ['limit=1&limit=2', 'limit'],
      ]) {
        const res = await raw('GET', `/v1/responses/${created.id}/input_items?${q}`);
        expect({ q, status: res.status, param: res.body.error?.param }).toEqual({ q, status: 400, param });
      }
      expect((await raw('GET', `/v1/responses/${created.id}/input_items?limit=100`)).status).toBe(200);
      const stranger = (await f.createKey({ name: 'responses-list-stranger' })).key;
      expect((await raw('GET', `/v1/responses/${created.id}/input_items`, stranger)).status).toBe(404);
      expect((await raw('GET', `/v1/responses/resp_nope/input_items`)).status).toBe(404);
    });
  });

  describe('unknown fields and refusals of POST /v1/responses', () => {
    it("fields the gateway does not know follow the deployment's unknownFields policy, as on chat", async () => {
      const extra = {
        moderation: { mode: 'standard' },
        prompt_cache_options: { ttl: '1h' },
        context_management: [{ type: 'compaction', compact_threshold: 1000 }],
        future_field: 1,
      };
      expect((await raw('POST', '/v1/responses', key, { model: 'vendor-gpt-4', input: 'hi', ...extra })).status).toBe(
        200,
      );
      expect(f.openai.requests[0].body).toMatchObject(extra);
      expect(
        (await raw('POST', '/v1/responses', key, { model: 'vendor-llama-70b', input: 'hi', ...extra })).status,
      ).toBe(200);
      for (const k of Object.keys(extra)) expect(f.openaiBackup.requests[0].body).not.toHaveProperty(k);
      expect(
        (await raw('POST', '/v1/responses', key, { model: 'vendor-claude-3', input: 'hi', ...extra })).status,
      ).toBe(200);
      for (const k of Object.keys(extra)) expect(f.anthropic.requests[0].body).not.toHaveProperty(k);
      // Bounded as chat's: no length, cost or routing levers at any depth.
      const lever = await raw('POST', '/v1/responses', key, {
        model: 'vendor-gpt-4',
        input: 'hi',
        context_management: [{ type: 'compaction', max_tokens: 99 }],
      });
      expect(lever.status).toBe(400);
      expect(lever.body.error.param).toBe('context_management.0.max_tokens');
      expect(f.openai.requests).toHaveLength(1);
    });

    it('known but unserved features: 400 with param and a message naming the alternative, before any upstream call', async () => {
      const cases: Array<[Record<string, unknown>, string, string]> = [
        [
          { input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://example.com/a.pdf' }] }] },
          'input[0].content[0].file_url',
          'send file_data',
        ],
        [
          { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }] },
          'input[0].content[0].file_id',
          'send file_data',
        ],
        [
          { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1', detail: 'auto' }] }] },
          'input[0].content[0].file_id',
          'send image_url',
        ],
        [{ input: 'hi', tools: [{ type: 'web_search' }] }, 'tools[0].type', 'define a function tool'],
        [
          { input: 'hi', tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] },
          'tools[0].type',
          'define a function tool',
        ],
        [{ input: 'hi', background: true }, 'background', 'without background'],
        [{ input: 'hi', prompt: { id: 'pmpt_1' } }, 'prompt', 'instructions and input'],
        [{ input: 'hi', conversation: 'conv_1' }, 'conversation', 'previous_response_id'],
      ];
      for (const [body, param, alternative] of cases) {
        const res = await raw('POST', '/v1/responses', key, { model: 'vendor-gpt-4', ...body });
        expect({
          param,
          status: res.status,
          got: res.body.error?.param,
          names: String(res.body.error?.message).includes(alternative),
        }).toEqual({ param, status: 400, got: param, names: true });
      }
      expect(f.openai.requests).toHaveLength(0);
    });
  });
});

describe('AI gateway /v1/responses: stored bytes a key may load per minute (AI_RESPONSES_LOAD_BYTES_PER_MINUTE)', () => {
  const LIMIT = 20_000;
  // The start of a minute of the gateway's clock, which stands still: the test's minute cannot end mid-test.
  const clock = new FakeClock(Date.UTC(2026, 10, 29, 8, 0, 0));
  let f: GatewayFixture;
  beforeAll(async () => {
    f = await startGatewayFixture({ AI_RESPONSES_LOAD_BYTES_PER_MINUTE: String(LIMIT) }, undefined, { clock });
  });
  afterAll(() => f?.close());

  const post = async (apiKey: string, body: unknown) => {
    const res = await fetch(`${f.gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  };

  it('counts what previous_response_id loads per key, refuses past the limit with 429 before any upstream call, and admits again the next minute', async () => {
    const a = (await f.createKey({ name: 'load-a' })).key;
    const b = (await f.createKey({ name: 'load-b' })).key;
    const stored = await post(a, { model: 'vendor-gpt-4', input: 'word '.repeat(400) });
    expect(stored.status).toBe(200);
    const [{ bytes }] = await query(f.gw.dbUrl, `SELECT bytes::int AS bytes FROM ai_responses WHERE id = $1`, [
      stored.body.id,
    ]);
    const fits = Math.floor(LIMIT / bytes);
    expect(fits).toBeGreaterThanOrEqual(2);
    const followUp = { model: 'vendor-gpt-4', previous_response_id: stored.body.id, input: 'and?', store: false };
    for (let i = 0; i < fits; i++) expect((await post(a, followUp)).status).toBe(200);
    const upstreamCalls = f.openai.requests.length;
    const refused = await post(a, followUp);
    expect([refused.status, refused.retryAfter]).toEqual([429, '60']);
    expect(refused.body.error).toEqual({
      message: `Rate limit reached for this API key on stored input loaded per min: Limit ${LIMIT} bytes, Used ${fits * bytes}, Requested ${bytes}. Please try again in 60s.`,
      type: 'requests',
      code: 'rate_limit_exceeded',
      param: 'previous_response_id',
    });
    expect(f.openai.requests).toHaveLength(upstreamCalls);
    // Another key's budget is its own.
    const other = await post(b, { model: 'vendor-gpt-4', input: 'word '.repeat(400) });
    expect((await post(b, { ...followUp, previous_response_id: other.body.id })).status).toBe(200);
    // The next minute of the gateway's clock.
    clock.advance(60_000);
    expect((await post(a, followUp)).status).toBe(200);
  });

  it('counts what reading a stored response back loads (GET /v1/responses/{id}, its input items) against the same minute', async () => {
    const c = (await f.createKey({ name: 'load-c' })).key;
    const stored = await post(c, { model: 'vendor-gpt-4', input: 'word '.repeat(400) });
    const [{ bytes }] = await query(f.gw.dbUrl, `SELECT bytes::int AS bytes FROM ai_responses WHERE id = $1`, [
      stored.body.id,
    ]);
    const get = async (path: string) => {
      const res = await fetch(`${f.gw.url}/v1/responses/${stored.body.id}${path}`, {
        headers: { authorization: `Bearer ${c}` },
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
    };
    const fits = Math.floor(LIMIT / bytes);
    for (let i = 0; i < fits; i++) expect((await get(i % 2 ? '' : '/input_items')).status).toBe(200);
    for (const path of ['', '/input_items']) {
      const refused = await get(path);
      expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
        429,
        'rate_limit_exceeded',
        null,
      ]);
      expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    }
    // An unknown id loads nothing: 404, counted as nothing.
    const unknown = await fetch(`${f.gw.url}/v1/responses/resp_unknown`, { headers: { authorization: `Bearer ${c}` } });
    expect(unknown.status).toBe(404);
  });
});

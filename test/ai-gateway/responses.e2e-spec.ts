// POST /v1/responses through the official openai SDK (6.x): translated onto the chat pipeline for
// the OpenAI and Anthropic fake upstreams (test/support/upstreams/fake-upstream.ts).
import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { Clock, SharedState } from '@app/platform';
import type { GatewayConfig } from '../../apps/ai-gateway/src/config/gateway.config';
import { ResponsesRepository } from '../../apps/ai-gateway/src/responses/responses.repository';
import { GatewayFixture, resetUpstreams, startGatewayFixture, weatherTool } from './gateway-fixture';
import { ledgerRows } from './media/ledger';
import { queryRows as query } from '../support/database';

describe('AI gateway /v1/responses (openai SDK)', () => {
  let f: GatewayFixture;
  let key: string;
  let client: OpenAI;

  beforeAll(async () => {
    f = await startGatewayFixture({ AI_RESPONSES_STORE_MAX_BYTES_PER_KEY: String(256 * 1024) });
    key = (await f.createKey({ name: 'responses-test' })).key;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
  });
  afterAll(() => f?.close());
  beforeEach(() => resetUpstreams(f));

  it('answers text input with instructions as a response object, the limit sent upstream exactly', async () => {
    const res = await client.responses.create({
      model: 'vendor-gpt-4',
      instructions: 'Be brief.',
      input: 'hello gateway',
      max_output_tokens: 50,
      temperature: 0.5,
    });
    expect(res.id).toMatch(/^resp_/);
    expect(res.object).toBe('response');
    expect(res.status).toBe('completed');
    expect(res.model).toBe('vendor-gpt-4');
    expect(res.output_text).toBe('Echo: hello gateway');
    expect(res.output).toEqual([
      expect.objectContaining({
        type: 'message',
        role: 'assistant',
        content: [expect.objectContaining({ type: 'output_text', text: 'Echo: hello gateway' })],
      }),
    ]);
    expect(res.usage).toMatchObject({ input_tokens: 6, output_tokens: 3, total_tokens: 9 });
    const sent = f.openai.requests[0].body;
    expect(f.openai.requests[0].path).toBe('/v1/chat/completions');
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello gateway' },
    ]);
    expect(sent).toMatchObject({ model: 'gpt-4o', temperature: 0.5 });
    expect(sent.max_completion_tokens ?? sent.max_tokens).toBe(50);
  });

  it('streams the Responses events in order, numbered, with usage at the end', async () => {
    const stream = await client.responses.create({
      model: 'vendor-claude-3',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'one two three' }] }],
      stream: true,
    });
    const events: any[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const text = events
      .filter((e) => e.type === 'response.output_text.delta')
      .map((e) => e.delta)
      .join('');
    expect(text).toBe('Echo: one two three');
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThan(1);
    const done = events[events.length - 1].response;
    expect(done).toMatchObject({
      status: 'completed',
      model: 'vendor-claude-3',
      usage: { input_tokens: expect.any(Number), output_tokens: 4 },
    });
    expect(done.output[0].content[0].text).toBe('Echo: one two three');
  });

  for (const model of ['vendor-gpt-4', 'vendor-claude-3']) {
    for (const streamed of [false, true]) {
      it(`runs a two-step function-tool loop on ${model}${streamed ? ' (streamed)' : ''}`, async () => {
        const input: any[] = [{ role: 'user', content: 'Paris' }];
        const ask = async () => {
          if (!streamed) return client.responses.create({ model, input, tools: [weatherTool] });
          const s = client.responses.stream({ model, input, tools: [weatherTool] });
          const deltas: string[] = [];
          s.on('response.function_call_arguments.delta', (e) => deltas.push(e.delta));
          const final = await s.finalResponse();
          const call = final.output.find((o) => o.type === 'function_call') as any;
          if (call) expect(deltas.join('')).toBe(call.arguments);
          return final;
        };
        const first = await ask();
        const call = first.output.find((o) => o.type === 'function_call') as any;
        expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', call_id: expect.any(String) });
        expect(JSON.parse(call.arguments)).toEqual({ city: expect.any(String) });
        const upstream = model === 'vendor-gpt-4' ? f.openai : f.anthropic;
        if (model === 'vendor-gpt-4')
          expect(upstream.requests[0].body.tools).toEqual([
            {
              type: 'function',
              function: {
                name: 'get_weather',
                description: weatherTool.description,
                parameters: weatherTool.parameters,
                strict: false,
              },
            },
          ]);
        else
          expect(upstream.requests[0].body.tools).toEqual([
            expect.objectContaining({ name: 'get_weather', input_schema: expect.objectContaining({ type: 'object' }) }),
          ]);

        input.push(...first.output.map(({ id: _id, status: _status, ...rest }: any) => rest), {
          type: 'function_call_output',
          call_id: call.call_id,
          output: 'sunny 21C',
        });
        const second = await ask();
        expect(second.output.some((o) => o.type === 'function_call')).toBe(false);
        expect(second.output_text).toContain('sunny 21C');
        if (model === 'vendor-gpt-4') {
          const msgs = upstream.requests[1].body.messages;
          expect(msgs[msgs.length - 2]).toMatchObject({
            role: 'assistant',
            tool_calls: [
              { id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } },
            ],
          });
          expect(msgs[msgs.length - 1]).toEqual({ role: 'tool', tool_call_id: call.call_id, content: 'sunny 21C' });
        } else {
          const msgs = upstream.requests[1].body.messages;
          expect(msgs[msgs.length - 1].content).toEqual([
            expect.objectContaining({ type: 'tool_result', tool_use_id: call.call_id }),
          ]);
        }
      });
    }
  }

  it('refuses previous_response_id, unknown items and hosted tools with 400 naming them, before any upstream call', async () => {
    const prev: any = await client.responses
      .create({ model: 'vendor-gpt-4', input: 'hi', previous_response_id: 'resp_123' })
      .catch((e) => e);
    expect(prev.status).toBe(400);
    expect(prev.error).toMatchObject({ param: 'previous_response_id', type: 'invalid_request_error' });
    expect(prev.message).toContain('resp_123');

    const item: any = await client.responses
      .create({
        model: 'vendor-gpt-4',
        input: [{ role: 'user', content: 'hi' }, { type: 'web_search_call', id: 'ws_1', status: 'completed' } as any],
      })
      .catch((e) => e);
    expect(item.status).toBe(400);
    expect(item.error.param).toBe('input[1].type');
    expect(item.message).toContain('web_search_call');

    const orphan: any = await client.responses
      .create({
        model: 'vendor-gpt-4',
        input: [
          { role: 'user', content: 'hi' },
          { type: 'function_call_output', call_id: 'call_x', output: 'x' },
        ],
      })
      .catch((e) => e);
    expect(orphan.status).toBe(400);
    expect(orphan.error.param).toBe('input[1].call_id');

    const hosted: any = await client.responses
      .create({ model: 'vendor-gpt-4', input: 'hi', tools: [{ type: 'web_search' } as any] })
      .catch((e) => e);
    expect(hosted.status).toBe(400);
    expect(hosted.error.param).toBe('tools[0].type');

    // A Chat Completions field is not a Responses one (unknown fields in general follow the deployment's
    // unknownFields policy: responses-stored.e2e-spec.ts).
    const unknown = await fetch(`${f.gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vendor-gpt-4', input: 'hi', n: 2 }),
    });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).error).toMatchObject({ param: 'n', code: 'unknown_parameter' });
    expect(f.openai.requests).toHaveLength(0);
  });

  it('reserves the budget and writes a ledger row with endpoint responses; the key scopes apply', async () => {
    const { id, key: budgetKey } = await f.createKey({ budget_yuan: 1 });
    const sdk = new OpenAI({ apiKey: budgetKey, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    const res = await sdk.responses.create({ model: 'vendor-gpt-4', input: 'alpha beta', max_output_tokens: 20 });
    expect(res.usage).toMatchObject({ input_tokens: 3, output_tokens: 3 });
    const k = (await f.admin('GET', `/admin/keys/${id}`)).body;
    // 3 tokens in at 1 yuan/1k, 3 out at 2 yuan/1k; nothing stays held.
    expect(k).toMatchObject({ reserved_yuan: 0 });
    expect(k.spent_yuan).toBeCloseTo(0.003 + 0.006, 8);
    // The ledger write is batched: wait for the row (a write that never comes ends at Jest's timeout).
    await ledgerRows(f.gw.dbUrl, 'responses', 1, 0, id);
    const rows = await query(
      f.gw.dbUrl,
      `SELECT endpoint, model, status, prompt_tokens, completion_tokens FROM ai_usage_records WHERE key_id = $1`,
      [id],
    );
    expect(rows).toEqual([
      { endpoint: 'responses', model: 'vendor-gpt-4', status: 'ok', prompt_tokens: 3, completion_tokens: 3 },
    ]);

    // A budget the reservation cannot cover: refused before the upstream is called.
    const poor = await f.createKey({ budget_yuan: 0.001 });
    const refused: any = await new OpenAI({ apiKey: poor.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 }).responses
      .create({ model: 'vendor-gpt-4', input: 'alpha', max_output_tokens: 1000 })
      .catch((e) => e);
    expect(refused.status).toBe(429);
    expect(refused.error.code).toBe('insufficient_quota');

    const embeddingsOnly = await f.createKey({ scopes: ['embeddings'] });
    const denied: any = await new OpenAI({
      apiKey: embeddingsOnly.key,
      baseURL: `${f.gw.url}/v1`,
      maxRetries: 0,
    }).responses
      .create({ model: 'vendor-gpt-4', input: 'hi' })
      .catch((e) => e);
    expect(denied.status).toBe(403);
    expect(f.openai.requests).toHaveLength(1);
  });

  describe('store (stored responses, item_reference, previous_response_id)', () => {
    /** Runs the sweep as a replica's timer does (a sweep already running is waited for: either way the expired rows are gone). */
    const sweep = async () => {
      const db = await new DataSource({ type: 'postgres', url: f.gw.dbUrl }).initialize();
      try {
        await new ResponsesRepository(
          db,
          { AI_RESPONSES_STORE_TTL_HOURS: 24 } as GatewayConfig,
          {} as SharedState,
          new Clock(),
        ).sweep();
      } finally {
        await db.destroy();
      }
    };
    const storedRows = (id: string) =>
      query(
        f.gw.dbUrl,
        `SELECT r.key_id, r.input, r.output, r.expires_at > now() + interval '23 hours' AS day, (SELECT count(*)::int FROM ai_response_items i WHERE i.response_id = r.id) AS items FROM ai_responses r WHERE r.id = $1`,
        [id],
      );

    for (const model of ['vendor-gpt-4', 'vendor-claude-3']) {
      for (const streamed of [false, true]) {
        it(`store left at its default (true): the tool loop refers to the function_call by item_reference on ${model}${streamed ? ' (streamed)' : ''}`, async () => {
          const ask = async (input: any[]) =>
            streamed
              ? client.responses.stream({ model, input, tools: [weatherTool] }).finalResponse()
              : client.responses.create({ model, input, tools: [weatherTool] });
          const first = await ask([{ role: 'user', content: 'Paris' }]);
          expect((first as any).store).toBe(true);
          const call = first.output.find((o) => o.type === 'function_call') as any;
          expect(call.id).toMatch(/^fc_/);
          // Stored before it was answered, for this key, with the default lifetime (24 h).
          const [row] = await storedRows(first.id);
          expect(row).toMatchObject({
            input: [{ role: 'user', content: 'Paris' }],
            output: first.output.map((o: any) =>
              expect.objectContaining({ id: o.id, type: o.type, status: 'completed' }),
            ),
            day: true,
            items: first.output.length,
          });

          // As the AI SDK sends it with store on: the model's own items by reference only.
          const second = await ask([
            { role: 'user', content: 'Paris' },
            ...first.output.map((o) => ({ type: 'item_reference' as const, id: o.id! })),
            { type: 'function_call_output', call_id: call.call_id, output: 'sunny 21C' },
          ]);
          expect(second.output_text).toContain('sunny 21C');
          const upstream = model === 'vendor-gpt-4' ? f.openai : f.anthropic;
          const msgs = upstream.requests[1].body.messages;
          if (model === 'vendor-gpt-4') {
            expect(msgs[msgs.length - 2]).toMatchObject({
              role: 'assistant',
              tool_calls: [
                { id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } },
              ],
            });
            expect(msgs[msgs.length - 1]).toEqual({ role: 'tool', tool_call_id: call.call_id, content: 'sunny 21C' });
          } else {
            expect(msgs[msgs.length - 2].content).toEqual(
              expect.arrayContaining([
                expect.objectContaining({ type: 'tool_use', id: call.call_id, name: 'get_weather' }),
              ]),
            );
            expect(msgs[msgs.length - 1].content).toEqual([
              expect.objectContaining({ type: 'tool_result', tool_use_id: call.call_id }),
            ]);
          }
        });
      }
    }

    it('previous_response_id puts the stored input and output before the new items; chains; echoed in the answer', async () => {
      const first = await client.responses.create({
        model: 'vendor-gpt-4',
        instructions: 'Only for the first call.',
        input: 'Paris',
        tools: [weatherTool],
      });
      const call = first.output.find((o) => o.type === 'function_call') as any;
      const second = await client.responses.create({
        model: 'vendor-gpt-4',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny 21C' }],
        tools: [weatherTool],
      });
      expect(second.previous_response_id).toBe(first.id);
      expect(second.output_text).toContain('sunny 21C');
      // Instructions are not carried over (as OpenAI documents); the conversation is.
      expect(f.openai.requests[1].body.messages).toEqual([
        { role: 'user', content: 'Paris' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } },
          ],
        },
        { role: 'tool', tool_call_id: call.call_id, content: 'sunny 21C' },
      ]);
      const third = await client.responses.create({
        model: 'vendor-gpt-4',
        previous_response_id: second.id,
        input: 'thanks',
      });
      const msgs = f.openai.requests[2].body.messages;
      expect(msgs).toHaveLength(5);
      expect(msgs[3]).toEqual({ role: 'assistant', content: second.output_text });
      expect(msgs[4]).toEqual({ role: 'user', content: 'thanks' });
      expect(third.status).toBe('completed');
    });

    it('another key, an expired response and an unknown id are refused alike (400 naming the id), before any upstream call', async () => {
      const first = await client.responses.create({ model: 'vendor-gpt-4', input: 'Paris', tools: [weatherTool] });
      const call = first.output.find((o) => o.type === 'function_call') as any;
      const other = new OpenAI({
        apiKey: (await f.createKey({ name: 'responses-stranger' })).key,
        baseURL: `${f.gw.url}/v1`,
        maxRetries: 0,
      });
      f.openai.reset();
      const refer = (sdk: OpenAI, id: string) =>
        sdk.responses
          .create({
            model: 'vendor-gpt-4',
            input: [
              { role: 'user', content: 'Paris' },
              { type: 'item_reference', id },
              { type: 'function_call_output', call_id: call.call_id, output: 'x' },
            ],
          })
          .catch((e) => e);
      const follow = (sdk: OpenAI, id: string) =>
        sdk.responses.create({ model: 'vendor-gpt-4', previous_response_id: id, input: 'more' }).catch((e) => e);

      const strangerItem = await refer(other, call.id);
      expect(strangerItem.status).toBe(400);
      expect(strangerItem.error).toMatchObject({
        type: 'invalid_request_error',
        param: 'input[1]',
        message: `Item with id '${call.id}' not found.`,
      });
      const strangerPrev = await follow(other, first.id);
      expect(strangerPrev.status).toBe(400);
      expect(strangerPrev.error).toMatchObject({
        param: 'previous_response_id',
        message: `Previous response with id '${first.id}' not found.`,
      });
      // The same answer as for an id nobody ever had: no oracle.
      const unknown = await follow(other, 'resp_' + '0'.repeat(48));
      expect(unknown.error).toMatchObject({
        param: 'previous_response_id',
        code: strangerPrev.error.code,
        type: strangerPrev.error.type,
      });

      await query(f.gw.dbUrl, `UPDATE ai_responses SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        first.id,
      ]);
      const expiredItem = await refer(client, call.id);
      expect(expiredItem.status).toBe(400);
      expect(expiredItem.error).toMatchObject({ param: 'input[1]', message: `Item with id '${call.id}' not found.` });
      const expiredPrev = await follow(client, first.id);
      expect(expiredPrev.status).toBe(400);
      expect(expiredPrev.error.param).toBe('previous_response_id');
      expect(f.openai.requests).toHaveLength(0);
    });

    it('the sweep deletes expired responses with their items and keeps live ones', async () => {
      const live = await client.responses.create({ model: 'vendor-gpt-4', input: 'Paris', tools: [weatherTool] });
      const gone = await client.responses.create({ model: 'vendor-gpt-4', input: 'Paris', tools: [weatherTool] });
      await query(f.gw.dbUrl, `UPDATE ai_responses SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        gone.id,
      ]);
      await sweep();
      expect(await storedRows(gone.id)).toEqual([]);
      expect(await query(f.gw.dbUrl, `SELECT 1 FROM ai_response_items WHERE response_id = $1`, [gone.id])).toEqual([]);
      expect(await storedRows(live.id)).toHaveLength(1);
    });

    it('a key keeps at most AI_RESPONSES_STORE_MAX_BYTES_PER_KEY stored: past it the answer says store: false, until expired ones are swept', async () => {
      const sdk = new OpenAI({
        apiKey: (await f.createKey({ name: 'responses-quota' })).key,
        baseURL: `${f.gw.url}/v1`,
        maxRetries: 0,
      });
      const big = 'x'.repeat(60_000);
      const ask = async (input: string) =>
        (await sdk.responses.create({ model: 'vendor-gpt-4', input })) as OpenAI.Responses.Response & {
          store: boolean;
        };
      const keyTotal = async (id: string) =>
        (
          await query(
            f.gw.dbUrl,
            `SELECT u.bytes::int AS counted, (SELECT sum(bytes)::int FROM ai_responses r WHERE r.key_id = u.key_id) AS stored
               FROM ai_response_store_usage u WHERE u.key_id = (SELECT key_id FROM ai_responses WHERE id = $1)`,
            [id],
          )
        )[0];
      // The fixture's quota is 256 KiB; each of these stores ~120 kB (the fake upstream echoes the input):
      // two fit, a third does not (answered all the same).
      const first = await ask(big);
      const second = await ask(big);
      const third = await ask(big);
      expect([first.store, second.store, third.store]).toEqual([true, true, false]);
      expect(third.status).toBe('completed');
      expect(await storedRows(third.id)).toEqual([]);
      const total = await keyTotal(first.id);
      expect(total.counted).toBeGreaterThan(200_000);
      expect(total.counted).toBe(total.stored);
      // What still fits is stored; another key is not affected by this one's total.
      expect((await ask('hi')).store).toBe(true);
      expect(((await client.responses.create({ model: 'vendor-gpt-4', input: big })) as any).store).toBe(true);
      // Once the first expires and is swept, its bytes are free again.
      await query(f.gw.dbUrl, `UPDATE ai_responses SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        first.id,
      ]);
      await sweep();
      const fourth = await ask(big);
      expect(fourth.store).toBe(true);
      const after = await keyTotal(second.id);
      expect(after.counted).toBe(after.stored);

      // A total that drifted (a row deleted by a replica older than the quota, which did not lower it) is
      // the sum of the key's rows again after its next sweep.
      await query(f.gw.dbUrl, `DELETE FROM ai_responses WHERE id = $1`, [second.id]);
      expect((await keyTotal(fourth.id)).counted).toBeGreaterThan((await keyTotal(fourth.id)).stored);
      await query(f.gw.dbUrl, `UPDATE ai_responses SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        fourth.id,
      ]);
      const last = await ask('hi');
      await sweep();
      const healed = await keyTotal(last.id);
      expect(healed.counted).toBe(healed.stored);
    });

    it('concurrent saves of one key never take it past its quota, and the total stays the sum of its rows', async () => {
      const sdk = new OpenAI({
        apiKey: (await f.createKey({ name: 'responses-quota-race' })).key,
        baseURL: `${f.gw.url}/v1`,
        maxRetries: 0,
      });
      // ~40 kB each against 256 KiB: at most 6 fit, whatever the interleaving of 12 calls at once.
      const answers = (await Promise.all(
        Array.from({ length: 12 }, () => sdk.responses.create({ model: 'vendor-gpt-4', input: 'y'.repeat(20_000) })),
      )) as Array<OpenAI.Responses.Response & { store: boolean }>;
      const stored = answers.filter((a) => a.store);
      expect(stored.length).toBe(6);
      const rows = await query(
        f.gw.dbUrl,
        `SELECT (SELECT bytes::int FROM ai_response_store_usage u WHERE u.key_id = r.key_id) AS counted, sum(r.bytes)::int AS stored, count(*)::int AS n FROM ai_responses r WHERE r.id = ANY($1) GROUP BY r.key_id`,
        [answers.map((a) => a.id)],
      );
      expect(rows).toEqual([{ counted: rows[0].stored, stored: expect.any(Number), n: 6 }]);
      expect(rows[0].counted).toBeLessThanOrEqual(256 * 1024);
    });

    it('store: false writes nothing and its items cannot be referred to', async () => {
      const res = await client.responses.create({
        model: 'vendor-gpt-4',
        input: 'Paris',
        tools: [weatherTool],
        store: false,
      });
      expect((res as any).store).toBe(false);
      const call = res.output.find((o) => o.type === 'function_call') as any;
      expect(await storedRows(res.id)).toEqual([]);
      expect(await query(f.gw.dbUrl, `SELECT 1 FROM ai_response_items WHERE id = $1`, [call.id])).toEqual([]);
      const refused: any = await client.responses
        .create({
          model: 'vendor-gpt-4',
          input: [
            { role: 'user', content: 'Paris' },
            { type: 'item_reference', id: call.id },
          ],
        })
        .catch((e) => e);
      expect(refused.status).toBe(400);
      expect(refused.error.param).toBe('input[1]');
      const streamed = await client.responses
        .stream({ model: 'vendor-gpt-4', input: 'hello', store: false })
        .finalResponse();
      expect((streamed as any).store).toBe(false);
      expect(await storedRows(streamed.id)).toEqual([]);
    });
  });

  describe('work bounded by what the key is allowed and billed for', () => {
    const storedInput = (id: string) => query(f.gw.dbUrl, `SELECT input, bytes FROM ai_responses WHERE id = $1`, [id]);
    const post = async (apiKey: string, body: unknown) => {
      const res = await fetch(`${f.gw.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };

    it('stores only what was forwarded: fields the upstream never received are not kept, whatever their size', async () => {
      const pad = 'p'.repeat(100_000);
      const res = await post(key, {
        model: 'vendor-gpt-4',
        tools: [weatherTool],
        input: [
          {
            type: 'message',
            role: 'user',
            id: 'msg_client',
            status: 'completed',
            junk: pad,
            content: [
              { type: 'input_text', text: 'Paris', junk: pad },
              { type: 'input_text', text: ' weather?', annotations: [pad] },
            ],
          },
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: pad }] },
          {
            type: 'function_call',
            id: 'fc_client',
            call_id: 'call_a',
            name: 'get_weather',
            arguments: '{"city":"Paris"}',
            status: 'completed',
            junk: pad,
          },
          {
            type: 'function_call_output',
            call_id: 'call_a',
            output: [{ type: 'input_text', text: 'sunny', junk: pad }],
            junk: pad,
          },
        ],
      });
      expect(res.status).toBe(200);
      expect(res.body.store).toBe(true);
      const [row] = await storedInput(res.body.id);
      expect(row.input).toEqual([
        { role: 'user', content: 'Paris weather?' },
        { type: 'function_call', call_id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'sunny' },
      ]);
      // The stored input is no larger than the request the upstream received.
      const forwarded = Buffer.byteLength(JSON.stringify(f.openai.requests[0].body));
      expect(Buffer.byteLength(JSON.stringify(row.input))).toBeLessThanOrEqual(forwarded);
      expect(row.bytes).toBeLessThan(2_000);
    });

    it('a stored reference is not loaded when the request is refused for its model, scope or budget (refused as such, not as an unknown id)', async () => {
      const unknown = 'resp_' + 'f'.repeat(48);
      const follow = (apiKey: string, model: string) =>
        post(apiKey, { model, previous_response_id: unknown, input: 'hi' });
      expect(await follow(key, 'no-such-model')).toMatchObject({
        status: 404,
        body: { error: { code: 'model_not_found' } },
      });
      const claudeOnly = await f.createKey({ models: ['vendor-claude-3'] });
      expect(await follow(claudeOnly.key, 'vendor-gpt-4')).toMatchObject({ status: 403 });
      const embeddingsOnly = await f.createKey({ scopes: ['embeddings'] });
      expect(await follow(embeddingsOnly.key, 'vendor-gpt-4')).toMatchObject({ status: 403 });
      const spent = await f.createKey({ budget_yuan: 1 });
      await query(f.gw.dbUrl, `UPDATE ai_api_keys SET spent_yuan = budget_yuan WHERE id = $1`, [spent.id]);
      expect(await follow(spent.key, 'vendor-gpt-4')).toMatchObject({
        status: 429,
        body: { error: { code: 'insufficient_quota' } },
      });
      // The same reference with everything else in order is looked up (and is unknown).
      expect(await follow(key, 'vendor-gpt-4')).toMatchObject({
        status: 400,
        body: { error: { param: 'previous_response_id' } },
      });
      expect(f.openai.requests).toHaveLength(0);
    });

    it('one request loads at most AI_RESPONSES_STORE_MAX_BYTES of stored items, an item referred to n times counted n times', async () => {
      const fanoutKey: string = (await f.createKey({ name: 'responses-fanout' })).key;
      const sdk = new OpenAI({ apiKey: fanoutKey, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      f.openai.behaviour.reply = 'r'.repeat(200_000);
      const first = await sdk.responses.create({ model: 'vendor-gpt-4', input: 'long answer please' });
      expect((first as any).store).toBe(true);
      f.openai.reset();
      const refer = (n: number) =>
        post(fanoutKey, {
          model: 'vendor-gpt-4',
          max_output_tokens: 5,
          input: [
            ...Array.from({ length: n }, () => ({ type: 'item_reference', id: first.output[0].id })),
            { role: 'user', content: 'and?' },
          ],
        });
      // 90 x ~200 kB is past the default 16 MiB: refused before the items are loaded or forwarded.
      const many = await refer(90);
      expect(many.status).toBe(400);
      expect(many.body.error).toMatchObject({ param: 'input', type: 'invalid_request_error' });
      expect(many.body.error.message).toContain('AI_RESPONSES_STORE_MAX_BYTES');
      expect(f.openai.requests).toHaveLength(0);
      const two = await refer(2);
      expect(two.status).toBe(200);
      expect(f.openai.requests[0].body.messages.slice(0, 2)).toEqual([
        { role: 'assistant', content: 'r'.repeat(200_000) },
        { role: 'assistant', content: 'r'.repeat(200_000) },
      ]);
    });
  });

  it('reports an upstream failure in the OpenAI error shape, and a broken stream as error + response.failed', async () => {
    f.openai.behaviour.failTimes = 100;
    const err: any = await client.responses.create({ model: 'vendor-gpt-4', input: 'hi' }).catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: expect.any(String), message: expect.stringContaining('fake 500') });

    f.openai.behaviour.failTimes = 0;
    f.openai.behaviour.dropAfterChunks = 1;
    const res = await fetch(`${f.gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vendor-gpt-4', input: 'one two three four', stream: true }),
    });
    const body = await res.text();
    const events = body
      .split('\n\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(events.map((e) => e.type).slice(-2)).toEqual(['error', 'response.failed']);
    expect(events[events.length - 1].response.status).toBe('failed');
  });
});

// POST /v1/responses through the official openai SDK (6.x): translated onto the chat pipeline for
// the OpenAI and Anthropic fake upstreams (test/support/upstreams/fake-upstream.ts).
import OpenAI from 'openai';
import { Client } from 'pg';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';
import { ledgerRows } from './media/ledger';

async function query(dbUrl: string, sql: string, params: unknown[] = []) {
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  try {
    return (await db.query(sql, params)).rows;
  } finally {
    await db.end();
  }
}

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: false,
};

describe('AI gateway /v1/responses (openai SDK)', () => {
  let f: GatewayFixture;
  let key: string;
  let client: OpenAI;

  beforeAll(async () => {
    f = await startGatewayFixture();
    key = (await f.createKey({ name: 'responses-test' })).key;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
  });
  afterAll(() => f?.close());
  beforeEach(() => {
    for (const u of [f.openai, f.anthropic, f.openaiBackup]) {
      const apiKey = u.behaviour.apiKey;
      u.reset();
      u.behaviour.apiKey = apiKey;
    }
  });

  it('answers text input with instructions as a response object, the limit sent upstream exactly', async () => {
    const res = await client.responses.create({ model: 'vendor-gpt-4', instructions: 'Be brief.', input: 'hello gateway', max_output_tokens: 50, temperature: 0.5 });
    expect(res.id).toMatch(/^resp_/);
    expect(res.object).toBe('response');
    expect(res.status).toBe('completed');
    expect(res.model).toBe('vendor-gpt-4');
    expect(res.output_text).toBe('Echo: hello gateway');
    expect(res.output).toEqual([expect.objectContaining({ type: 'message', role: 'assistant', content: [expect.objectContaining({ type: 'output_text', text: 'Echo: hello gateway' })] })]);
    expect(res.usage).toMatchObject({ input_tokens: 6, output_tokens: 3, total_tokens: 9 });
    const sent = f.openai.requests[0].body;
    expect(f.openai.requests[0].path).toBe('/v1/chat/completions');
    expect(sent.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello gateway' }]);
    expect(sent).toMatchObject({ model: 'gpt-4o', temperature: 0.5 });
    expect(sent.max_completion_tokens ?? sent.max_tokens).toBe(50);
  });

  it('streams the Responses events in order, numbered, with usage at the end', async () => {
    const stream = await client.responses.create({ model: 'vendor-claude-3', input: [{ role: 'user', content: [{ type: 'input_text', text: 'one two three' }] }], stream: true });
    const events: any[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    expect(text).toBe('Echo: one two three');
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThan(1);
    const done = events[events.length - 1].response;
    expect(done).toMatchObject({ status: 'completed', model: 'vendor-claude-3', usage: { input_tokens: expect.any(Number), output_tokens: 4 } });
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
        if (model === 'vendor-gpt-4') expect(upstream.requests[0].body.tools).toEqual([{ type: 'function', function: { name: 'get_weather', description: weatherTool.description, parameters: weatherTool.parameters, strict: false } }]);
        else expect(upstream.requests[0].body.tools).toEqual([expect.objectContaining({ name: 'get_weather', input_schema: expect.objectContaining({ type: 'object' }) })]);

        input.push(...first.output.map(({ id: _id, status: _status, ...rest }: any) => rest), { type: 'function_call_output', call_id: call.call_id, output: 'sunny 21C' });
        const second = await ask();
        expect(second.output.some((o) => o.type === 'function_call')).toBe(false);
        expect(second.output_text).toContain('sunny 21C');
        if (model === 'vendor-gpt-4') {
          const msgs = upstream.requests[1].body.messages;
          expect(msgs[msgs.length - 2]).toMatchObject({ role: 'assistant', tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } }] });
          expect(msgs[msgs.length - 1]).toEqual({ role: 'tool', tool_call_id: call.call_id, content: 'sunny 21C' });
        } else {
          const msgs = upstream.requests[1].body.messages;
          expect(msgs[msgs.length - 1].content).toEqual([expect.objectContaining({ type: 'tool_result', tool_use_id: call.call_id })]);
        }
      });
    }
  }

  it('refuses previous_response_id, unknown items and hosted tools with 400 naming them, before any upstream call', async () => {
    const prev: any = await client.responses.create({ model: 'vendor-gpt-4', input: 'hi', previous_response_id: 'resp_123' }).catch((e) => e);
    expect(prev.status).toBe(400);
    expect(prev.error).toMatchObject({ param: 'previous_response_id', type: 'invalid_request_error' });
    expect(prev.message).toContain('previous_response_id');

    const item: any = await client.responses.create({ model: 'vendor-gpt-4', input: [{ role: 'user', content: 'hi' }, { type: 'web_search_call', id: 'ws_1', status: 'completed' } as any] }).catch((e) => e);
    expect(item.status).toBe(400);
    expect(item.error.param).toBe('input[1].type');
    expect(item.message).toContain('web_search_call');

    const orphan: any = await client.responses.create({ model: 'vendor-gpt-4', input: [{ role: 'user', content: 'hi' }, { type: 'function_call_output', call_id: 'call_x', output: 'x' }] }).catch((e) => e);
    expect(orphan.status).toBe(400);
    expect(orphan.error.param).toBe('input[1].call_id');

    const hosted: any = await client.responses.create({ model: 'vendor-gpt-4', input: 'hi', tools: [{ type: 'web_search' } as any] }).catch((e) => e);
    expect(hosted.status).toBe(400);
    expect(hosted.error.param).toBe('tools[0].type');

    const unknown = await fetch(`${f.gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'vendor-gpt-4', input: 'hi', frobnicate: 1 }) });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).error).toMatchObject({ param: 'frobnicate', code: 'unknown_parameter' });
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
    const rows = await query(f.gw.dbUrl, `SELECT endpoint, model, status, prompt_tokens, completion_tokens FROM ai_usage_records WHERE key_id = $1`, [id]);
    expect(rows).toEqual([{ endpoint: 'responses', model: 'vendor-gpt-4', status: 'ok', prompt_tokens: 3, completion_tokens: 3 }]);

    // A budget the reservation cannot cover: refused before the upstream is called.
    const poor = await f.createKey({ budget_yuan: 0.001 });
    const refused: any = await new OpenAI({ apiKey: poor.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 }).responses.create({ model: 'vendor-gpt-4', input: 'alpha', max_output_tokens: 1000 }).catch((e) => e);
    expect(refused.status).toBe(429);
    expect(refused.error.code).toBe('insufficient_quota');

    const embeddingsOnly = await f.createKey({ scopes: ['embeddings'] });
    const denied: any = await new OpenAI({ apiKey: embeddingsOnly.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 }).responses.create({ model: 'vendor-gpt-4', input: 'hi' }).catch((e) => e);
    expect(denied.status).toBe(403);
    expect(f.openai.requests).toHaveLength(1);
  });

  it('reports an upstream failure in the OpenAI error shape, and a broken stream as error + response.failed', async () => {
    f.openai.behaviour.failTimes = 100;
    const err: any = await client.responses.create({ model: 'vendor-gpt-4', input: 'hi' }).catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: expect.any(String), message: expect.stringContaining('fake 500') });

    f.openai.behaviour.failTimes = 0;
    f.openai.behaviour.dropAfterChunks = 1;
    const res = await fetch(`${f.gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'vendor-gpt-4', input: 'one two three four', stream: true }) });
    const body = await res.text();
    const events = body
      .split('\n\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(events.map((e) => e.type).slice(-2)).toEqual(['error', 'response.failed']);
    expect(events[events.length - 1].response.status).toBe('failed');
  });
});

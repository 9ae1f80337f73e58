// The official `openai` SDK drives the gateway as an agent would, on an OpenAI-protocol and an
// Anthropic-protocol upstream: a two-step tool loop (model asks for the tool, the client runs it, the
// model answers with its result), streamed and not, through chat completions and the Responses API;
// image parts, the developer role and unknown fields reach each upstream in its own protocol.
import OpenAI from 'openai';
import type {
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { tinyPng } from '../support/png';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';
import {
  expectBilled,
  expectUpstreamToolRoundTrip,
  makeWeatherTool,
  MARKER,
  MODELS,
  QUESTION,
  resetUpstreams,
  TOOL_DESCRIPTION,
  TOOL_NAME,
  TOOL_PARAMETERS,
  UpstreamKind,
} from './clients-support';

const chatTools: ChatCompletionTool[] = [
  { type: 'function', function: { name: TOOL_NAME, description: TOOL_DESCRIPTION, parameters: TOOL_PARAMETERS } },
];

describe('real client: openai SDK through the gateway', () => {
  let f: GatewayFixture;
  const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 20_000 });
  const newKey = async () => f.createKey({ name: 'openai-sdk' });

  beforeAll(async () => {
    f = await startGatewayFixture();
  });
  afterAll(() => f?.close());
  beforeEach(() => {
    resetUpstreams(f);
  });

  describe.each<[UpstreamKind]>([['openai'], ['anthropic']])('chat completions tool loop, %s upstream', (kind) => {
    const model = MODELS[kind];

    it('non-streamed: the model asks for the tool, the client runs it, the model answers with its result', async () => {
      const { id, key } = await newKey();
      const client = sdk(key);
      const tool = makeWeatherTool();
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: QUESTION }];
      const first = await client.chat.completions.create({ model, messages, tools: chatTools, tool_choice: 'auto' });
      const choice = first.choices[0];
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.tool_calls).toHaveLength(1);
      const call = choice.message.tool_calls![0] as ChatCompletionMessageToolCall & { type: 'function' };
      expect(call).toMatchObject({
        id: expect.any(String),
        type: 'function',
        function: { name: TOOL_NAME, arguments: expect.any(String) },
      });
      messages.push(choice.message, {
        role: 'tool',
        tool_call_id: call.id,
        content: tool.run(JSON.parse(call.function.arguments)),
      });
      const second = await client.chat.completions.create({ model, messages, tools: chatTools });
      expect(second.choices[0].finish_reason).toBe('stop');
      expect(second.choices[0].message.content).toContain(MARKER);
      expect(tool.calls).toHaveLength(1);
      expect(second.usage?.prompt_tokens).toBeGreaterThan(0);
      expectUpstreamToolRoundTrip(f, kind);
      await expectBilled(f, id, 2, model);
    });

    it('streamed: tool call deltas (index, id, name, argument fragments) assemble into a call; the answer streams after the result', async () => {
      const { id, key } = await newKey();
      const client = sdk(key);
      const tool = makeWeatherTool();
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: QUESTION }];
      const stream = await client.chat.completions.create({
        model,
        messages,
        tools: chatTools,
        stream: true,
        stream_options: { include_usage: true },
      });
      const calls: { id?: string; name?: string; args: string }[] = [];
      let finish: string | null = null;
      let usage: OpenAI.CompletionUsage | undefined;
      let toolDeltaChunks = 0;
      for await (const chunk of stream) {
        for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
          toolDeltaChunks++;
          const c = (calls[d.index] ??= { args: '' });
          if (d.id) c.id = d.id;
          if (d.function?.name) c.name = d.function.name;
          if (d.function?.arguments) c.args += d.function.arguments;
        }
        if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
        if (chunk.usage) usage = chunk.usage;
      }
      expect(finish).toBe('tool_calls');
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({ id: expect.any(String), name: TOOL_NAME });
      // Both fakes send the arguments in several small fragments; the gateway forwards them, never one reassembled delta.
      expect(toolDeltaChunks).toBeGreaterThanOrEqual(2);
      expect(usage?.prompt_tokens).toBeGreaterThan(0);
      const args = JSON.parse(calls[0].args || '{}');
      messages.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: calls[0].id!, type: 'function', function: { name: calls[0].name!, arguments: calls[0].args } },
          ],
        },
        { role: 'tool', tool_call_id: calls[0].id!, content: tool.run(args) },
      );
      const answer = await client.chat.completions.create({ model, messages, tools: chatTools, stream: true });
      let text = '';
      let finish2: string | null = null;
      for await (const chunk of answer) {
        text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.choices[0]?.finish_reason) finish2 = chunk.choices[0].finish_reason;
      }
      expect(finish2).toBe('stop');
      expect(text).toContain(MARKER);
      expect(tool.calls).toHaveLength(1);
      expectUpstreamToolRoundTrip(f, kind);
      await expectBilled(f, id, 2, model);
    });

    it('runTools helper runs the whole loop', async () => {
      const { id, key } = await newKey();
      const tool = makeWeatherTool();
      const runner = sdk(key).chat.completions.runTools({
        model,
        messages: [{ role: 'user', content: QUESTION }],
        tools: [
          {
            type: 'function',
            function: {
              name: TOOL_NAME,
              description: TOOL_DESCRIPTION,
              parameters: TOOL_PARAMETERS,
              parse: JSON.parse,
              function: (args: unknown) => tool.run(args),
            },
          },
        ],
      });
      const content = await runner.finalContent();
      expect(content).toContain(MARKER);
      expect(tool.calls).toHaveLength(1);
      expectUpstreamToolRoundTrip(f, kind);
      await expectBilled(f, id, 2, model);
    });

    it('runTools helper, streamed', async () => {
      const { key } = await newKey();
      const tool = makeWeatherTool();
      const runner = sdk(key).chat.completions.runTools({
        model,
        stream: true,
        messages: [{ role: 'user', content: QUESTION }],
        tools: [
          {
            type: 'function',
            function: {
              name: TOOL_NAME,
              description: TOOL_DESCRIPTION,
              parameters: TOOL_PARAMETERS,
              parse: JSON.parse,
              function: (args: unknown) => tool.run(args),
            },
          },
        ],
      });
      expect(await runner.finalContent()).toContain(MARKER);
      expect(tool.calls).toHaveLength(1);
      expectUpstreamToolRoundTrip(f, kind);
    });
  });

  describe.each<UpstreamKind>(['openai', 'anthropic'])(
    'Responses API tool loop (client.responses.create), %s upstream',
    (kind) => {
      const model = MODELS[kind];
      const responseTools: OpenAI.Responses.Tool[] = [
        {
          type: 'function',
          name: TOOL_NAME,
          description: TOOL_DESCRIPTION,
          parameters: TOOL_PARAMETERS,
          strict: false,
        },
      ];

      it('non-streamed: function_call item, then function_call_output, then the answer (stateless: the client resends the input)', async () => {
        const { id, key } = await newKey();
        const client = sdk(key);
        const tool = makeWeatherTool();
        const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: QUESTION }];
        const first = await client.responses.create({ model, input, tools: responseTools });
        expect(first).toMatchObject({ object: 'response', status: 'completed', model });
        const calls = first.output.filter(
          (o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === 'function_call',
        );
        expect(calls).toHaveLength(1);
        expect(calls[0]).toMatchObject({ name: TOOL_NAME, call_id: expect.any(String), arguments: expect.any(String) });
        expect(first.usage?.input_tokens).toBeGreaterThan(0);
        input.push(...(first.output as OpenAI.Responses.ResponseInputItem[]), {
          type: 'function_call_output',
          call_id: calls[0].call_id,
          output: tool.run(JSON.parse(calls[0].arguments)),
        });
        const second = await client.responses.create({ model, input, tools: responseTools });
        expect(second.status).toBe('completed');
        expect(second.output_text).toContain(MARKER);
        expect(tool.calls).toHaveLength(1);
        expectUpstreamToolRoundTrip(f, kind);
        await expectBilled(f, id, 2, model);
      });

      it('streamed: response.created, function_call_arguments deltas, response.completed; then the answer as output_text deltas', async () => {
        const { id, key } = await newKey();
        const client = sdk(key);
        const tool = makeWeatherTool();
        const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: QUESTION }];
        const stream = await client.responses.create({ model, input, tools: responseTools, stream: true });
        const types: string[] = [];
        let argDeltas = '';
        let completed: OpenAI.Responses.Response | undefined;
        for await (const ev of stream) {
          types.push(ev.type);
          if (ev.type === 'response.function_call_arguments.delta') argDeltas += ev.delta;
          if (ev.type === 'response.completed') completed = ev.response;
        }
        expect(types[0]).toBe('response.created');
        expect(types[types.length - 1]).toBe('response.completed');
        expect(types).toContain('response.output_item.added');
        expect(types).toContain('response.output_item.done');
        const call = completed!.output.find(
          (o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === 'function_call',
        );
        expect(call).toMatchObject({ name: TOOL_NAME, call_id: expect.any(String) });
        expect(argDeltas).toBe(call!.arguments);
        expect(completed!.usage?.input_tokens).toBeGreaterThan(0);
        input.push(call as OpenAI.Responses.ResponseInputItem, {
          type: 'function_call_output',
          call_id: call!.call_id,
          output: tool.run(JSON.parse(call!.arguments || '{}')),
        });
        const answer = await client.responses.create({ model, input, tools: responseTools, stream: true });
        let text = '';
        let done: OpenAI.Responses.Response | undefined;
        for await (const ev of answer) {
          if (ev.type === 'response.output_text.delta') text += ev.delta;
          if (ev.type === 'response.completed') done = ev.response;
        }
        expect(text).toContain(MARKER);
        expect(
          done?.output_text ??
            done?.output
              .flatMap((o: any) => (o.type === 'message' ? o.content.map((c: any) => c.text ?? '') : []))
              .join(''),
        ).toContain(MARKER);
        expect(tool.calls).toHaveLength(1);
        expectUpstreamToolRoundTrip(f, kind);
        await expectBilled(f, id, 2, model);
      });
    },
  );

  it('an image_url part (data URL and https URL) reaches the Anthropic upstream as image blocks, and the OpenAI upstream unchanged', async () => {
    const { key } = await newKey();
    const client = sdk(key);
    const png = tinyPng().toString('base64');
    const content: OpenAI.Chat.ChatCompletionContentPart[] = [
      { type: 'text', text: 'What is in these pictures?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
    ];
    const claude = await client.chat.completions.create({
      model: MODELS.anthropic,
      messages: [{ role: 'user', content }],
    });
    expect(claude.choices[0].message.content).toEqual(expect.any(String));
    const sent = f.anthropic.requests[0].body.messages[0];
    expect(sent.role).toBe('user');
    expect(sent.content).toEqual([
      expect.objectContaining({ type: 'text', text: 'What is in these pictures?' }),
      expect.objectContaining({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }),
      expect.objectContaining({ type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } }),
    ]);

    await client.chat.completions.create({ model: MODELS.openai, messages: [{ role: 'user', content }] });
    expect(f.openai.requests[0].body.messages[0].content).toEqual(content);
  });

  it('the developer role becomes the Anthropic system prompt and stays developer for OpenAI', async () => {
    const { key } = await newKey();
    const client = sdk(key);
    const messages: ChatCompletionMessageParam[] = [
      { role: 'developer', content: 'Answer in one word.' },
      { role: 'user', content: 'hello there' },
    ];
    const claude = await client.chat.completions.create({ model: MODELS.anthropic, messages });
    expect(claude.choices[0].message.content).toBe('Echo: hello there');
    const body = f.anthropic.requests[0].body;
    expect(JSON.stringify(body.system)).toContain('Answer in one word.');
    expect(body.messages).toEqual([{ role: 'user', content: expect.anything() }]);
    await client.chat.completions.create({ model: MODELS.openai, messages });
    expect(f.openai.requests[0].body.messages[0]).toEqual({ role: 'developer', content: 'Answer in one word.' });
  });

  it('an unknown top-level field reaches the OpenAI upstream and is dropped for the Anthropic upstream', async () => {
    const { key } = await newKey();
    const client = sdk(key);
    const extra = { gateway_test_future_field: { level: 'high', n: 3 } };
    const params = { messages: [{ role: 'user' as const, content: 'hi' }], ...extra };
    const gpt = await client.chat.completions.create({
      model: MODELS.openai,
      ...params,
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    expect(gpt.choices[0].message.content).toBe('Echo: hi');
    expect(f.openai.requests[0].body.gateway_test_future_field).toEqual(extra.gateway_test_future_field);
    const claude = await client.chat.completions.create({
      model: MODELS.anthropic,
      ...params,
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    expect(claude.choices[0].message.content).toBe('Echo: hi');
    expect(f.anthropic.requests[0].body).not.toHaveProperty('gateway_test_future_field');
  });
});

import { GatewayError } from '../errors';
import { MAX_SCHEMA_DEPTH, translateResponsesRequest } from './responses-request';

function refusal(body: unknown): { status: number; param: unknown; message: string } {
  try {
    translateResponsesRequest(body);
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    const r = (e as GatewayError).getResponse() as any;
    return { status: (e as GatewayError).getStatus(), param: r.param, message: r.message };
  }
  throw new Error('accepted');
}

describe('translateResponsesRequest', () => {
  it('turns a tool loop into chat messages: calls join the assistant turn, outputs become tool turns', () => {
    const { chat } = translateResponsesRequest({
      model: 'm',
      instructions: 'Be brief.',
      input: [
        { role: 'developer', content: [{ type: 'input_text', text: 'Use tools.' }] },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather ' },
            { type: 'input_text', text: 'in Paris?' },
          ],
        },
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_1',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Checking.', annotations: [] }],
        },
        { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'call_2', name: 'get_time', arguments: '{}' },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
        { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'noon' }] },
      ],
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          strict: true,
        },
      ],
      tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: 40,
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true } },
      store: true,
      stream: true,
    });
    expect(chat.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Use tools.' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'call_2', content: 'noon' },
    ]);
    expect(chat).toMatchObject({
      model: 'm',
      max_completion_tokens: 40,
      stream: true,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
            strict: true,
          },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'answer', schema: { type: 'object' }, strict: true },
      },
    });
    expect(chat).not.toHaveProperty('store');
  });

  it('keeps image and file parts as chat content parts', () => {
    const { chat } = translateResponsesRequest({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
            { type: 'input_file', file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' },
          ],
        },
      ],
    });
    expect(chat.messages[0].content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
      { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' } },
    ]);
  });

  it.each([
    [{ model: 'm', input: 'hi', previous_response_id: 'resp_1' }, 'previous_response_id'],
    [{ model: 'm', input: 'hi', conversation: 'conv_1' }, 'conversation'],
    [{ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
    [
      {
        model: 'm',
        input: [
          { role: 'user', content: 'x' },
          { type: 'computer_call', id: 'c' },
        ],
      },
      'input[1].type',
    ],
    [
      {
        model: 'm',
        input: [
          { role: 'user', content: 'x' },
          { type: 'function_call_output', call_id: 'nope', output: 'x' },
        ],
      },
      'input[1].call_id',
    ],
    [{ model: 'm', input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
    [
      { model: 'm', input: [{ role: 'user', content: [{ type: 'input_audio', data: 'x' }] }] },
      'input[0].content[0].type',
    ],
    [
      { model: 'm', input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://x' }] }] },
      'input[0].content[0].type',
    ],
    [
      { model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] },
      'input[0].content[0].file_id',
    ],
    [{ model: 'm', input: [{ role: 'system', content: 'only system' }] }, 'input'],
    [{ model: 'm', input: [] }, 'input'],
    [{ model: 'm' }, 'input'],
    [{ model: 'm', input: 'hi', tools: [{ type: 'file_search' }] }, 'tools[0].type'],
    [{ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'bad name' }] }, 'tools[0].name'],
    [{ model: 'm', input: 'hi', tool_choice: { type: 'web_search' } }, 'tool_choice'],
    [{ model: 'm', input: 'hi', max_output_tokens: 0 }, 'max_output_tokens'],
    [{ model: 'm', input: 'hi', temperature: 3 }, 'temperature'],
    [{ model: 'm', input: 'hi', text: { format: { type: 'yaml' } } }, 'text.format.type'],
    [{ model: 'm', input: 'hi', background: true }, 'background'],
    [{ model: 'm', input: 'hi', n: 2 }, 'n'],
    [{ model: 'm', input: 'hi', messages: [] }, 'messages'],
    [{ model: 'm', input: 'hi', vendor: { thinking_budget: 9 } }, 'vendor.thinking_budget'],
    [{ model: 'm', input: 'hi', output_length: 9 }, 'output_length'],
    [
      {
        model: 'm',
        input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://example.com/a.pdf' }] }],
      },
      'input[0].content[0].file_url',
    ],
    [
      { model: 'm', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] },
      'input[0].content[0].file_id',
    ],
    [{ model: 'm', input: 'hi', prompt: { id: 'pmpt_1' } }, 'prompt'],
  ])('refuses %j with 400 naming %s', (body, param) => {
    expect(refusal(body)).toMatchObject({ status: 400, param });
  });

  it('names the alternative in each refusal of a known but unserved feature', () => {
    expect(
      refusal({
        model: 'm',
        input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://example.com/a.pdf' }] }],
      }).message,
    ).toContain('send file_data');
    expect(
      refusal({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }).message,
    ).toContain('send image_url');
    expect(refusal({ model: 'm', input: 'hi', tools: [{ type: 'web_search' }] }).message).toContain(
      'define a function tool',
    );
    expect(refusal({ model: 'm', input: 'hi', background: true }).message).toContain('without background');
    expect(refusal({ model: 'm', input: 'hi', prompt: { id: 'pmpt_1' } }).message).toContain(
      'as instructions and input',
    );
    expect(refusal({ model: 'm', input: 'hi', conversation: 'conv_1' }).message).toContain('previous_response_id');
  });

  it("carries fields it does not know (newer Responses fields) into the chat request, for the deployment's unknownFields policy", () => {
    const { chat, echo } = translateResponsesRequest({
      model: 'm',
      input: 'hi',
      moderation: { mode: 'strict' },
      prompt_cache_options: { ttl: '1h' },
      context_management: [{ type: 'compaction' }],
      frobnicate: 1,
    });
    expect(chat).toMatchObject({
      moderation: { mode: 'strict' },
      prompt_cache_options: { ttl: '1h' },
      context_management: [{ type: 'compaction' }],
      frobnicate: 1,
    });
    expect(echo).not.toHaveProperty('moderation');
  });

  it('bounds the depth of tool schemas', () => {
    let schema: any = { type: 'string' };
    for (let i = 0; i < MAX_SCHEMA_DEPTH; i++) schema = { type: 'object', properties: { a: schema } };
    expect(
      refusal({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'f', parameters: schema }] }),
    ).toMatchObject({ status: 400, param: 'tools[0].parameters' });
  });

  it('refuses an input_image URL that is not http(s) or data:image/, naming the item path', () => {
    for (const url of ['file:///etc/passwd', 'ftp://x/y.png', 'data:text/html,<b>x</b>', 'gopher://h']) {
      const r = refusal({
        model: 'm',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'see' },
              { type: 'input_image', image_url: url },
            ],
          },
        ],
      });
      expect(r).toMatchObject({ status: 400, param: 'input[0].content[1].image_url' });
    }
    const { chat } = translateResponsesRequest({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_image', image_url: 'https://example.com/a.png' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA' },
          ],
        },
      ],
    });
    expect((chat.messages[0].content as any[]).map((p) => p.image_url.url)).toEqual([
      'https://example.com/a.png',
      'data:image/png;base64,AAAA',
    ]);
  });

  it('joins a long run of function_call items into one assistant turn with work linear in the run (no copy per call)', () => {
    const run = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ type: 'function_call', call_id: `c${i}`, name: 'f', arguments: '{}' }));
    // Work units: elements handed out by array iterators (a spread copy per call walks the whole list again).
    const original = Array.prototype[Symbol.iterator];
    let steps = 0;
    const counted = function (this: unknown[]) {
      const it = original.call(this);
      const next = it.next.bind(it);
      it.next = () => {
        steps++;
        return next();
      };
      return it;
    };
    let chat: any;
    const n = 4000;
    Object.defineProperty(Array.prototype, Symbol.iterator, { value: counted, configurable: true, writable: true });
    try {
      chat = translateResponsesRequest({ model: 'm', input: [{ role: 'user', content: 'go' }, ...run(n)] }).chat;
    } finally {
      Object.defineProperty(Array.prototype, Symbol.iterator, { value: original, configurable: true, writable: true });
    }
    expect(chat.messages).toHaveLength(2);
    expect(chat.messages[1].tool_calls).toHaveLength(n);
    expect(chat.messages[1].tool_calls[n - 1].id).toBe(`c${n - 1}`);
    expect(steps).toBeLessThan(20 * n);
  });
  it('echoes (and so stores) only checked values: metadata within OpenAI limits, the format and tool_choice without extra fields', () => {
    const pad = 'p'.repeat(10_000);
    const { echo } = translateResponsesRequest({
      model: 'm',
      input: 'hi',
      metadata: { topic: 'weather' },
      truncation: 'auto',
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, junk: pad } },
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object' }, junk: pad }],
      tool_choice: { type: 'function', name: 'f', junk: pad },
    });
    expect(JSON.stringify(echo)).not.toContain(pad);
    expect(echo).toMatchObject({
      metadata: { topic: 'weather' },
      truncation: 'auto',
      tool_choice: { type: 'function', name: 'f' },
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: null } },
    });
    expect(
      translateResponsesRequest({ model: 'm', input: 'hi', text: { format: { type: 'text', junk: pad } } }).echo.text,
    ).toEqual({ format: { type: 'text' } });
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    expect(refusal({ model: 'm', input: 'hi', metadata: many })).toMatchObject({ status: 400, param: 'metadata' });
    expect(refusal({ model: 'm', input: 'hi', metadata: { k: pad } })).toMatchObject({
      status: 400,
      param: 'metadata.k',
    });
    expect(refusal({ model: 'm', input: 'hi', metadata: { k: 1 } })).toMatchObject({
      status: 400,
      param: 'metadata.k',
    });
    expect(refusal({ model: 'm', input: 'hi', truncation: pad })).toMatchObject({ status: 400, param: 'truncation' });
  });
});

import type { ChatCompletionChunk } from '@app/llm';
import { ResponsesAnswer } from './responses-answer';

const chunk = (delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('ResponsesAnswer', () => {
  it('translates streamed text and tool-call deltas into numbered Responses events, fragment by fragment', async () => {
    const a = new ResponsesAnswer('m', {});
    const events: any[] = [
      ...a.chunk(chunk({ role: 'assistant', content: '' })),
      ...a.chunk(chunk({ content: 'Let me ' })),
      ...a.chunk(chunk({ content: 'check.' })),
      ...a.chunk(
        chunk({
          tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }],
        }),
      ),
      ...a.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] })),
      ...a.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] })),
      ...a.chunk(chunk({}, 'tool_calls')),
      ...(await a.end({ prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 })),
    ];
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta)).toEqual([
      '{"city":',
      '"Paris"}',
    ]);
    const done = events[events.length - 1].response;
    expect(done).toMatchObject({
      object: 'response',
      status: 'completed',
      usage: { input_tokens: 5, output_tokens: 7, total_tokens: 12 },
    });
    expect(done.id).toMatch(/^resp_/);
    expect(done.output).toEqual([
      expect.objectContaining({
        type: 'message',
        status: 'completed',
        content: [expect.objectContaining({ type: 'output_text', text: 'Let me check.' })],
      }),
      expect.objectContaining({
        type: 'function_call',
        status: 'completed',
        call_id: 'call_1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
      }),
    ]);
  });

  it('gives streamed output_text parts their logprobs ([]) in content_part.added and .done', async () => {
    const a = new ResponsesAnswer('m', {});
    const events: any[] = [
      ...a.chunk(chunk({ content: 'hi' })),
      ...(await a.end({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })),
    ];
    const parts = events.filter((e) => e.type.startsWith('response.content_part.')).map((e) => e.part);
    expect(parts).toEqual([
      { type: 'output_text', text: '', annotations: [], logprobs: [] },
      { type: 'output_text', text: 'hi', annotations: [], logprobs: [] },
    ]);
  });

  it('reports cached, cache-written and reasoning tokens from the upstream usage, 0 when it said nothing', async () => {
    const withDetails = {
      prompt_tokens: 10,
      completion_tokens: 8,
      total_tokens: 18,
      prompt_tokens_details: { cached_tokens: 6, cache_write_tokens: 2 },
      completion_tokens_details: { reasoning_tokens: 5 },
    };
    const streamed = (await new ResponsesAnswer('m', {}).end(withDetails)) as any[];
    expect(streamed[streamed.length - 1].response.usage).toEqual({
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 6, cache_write_tokens: 2 },
      output_tokens: 8,
      output_tokens_details: { reasoning_tokens: 5 },
      total_tokens: 18,
    });
    const whole = (await new ResponsesAnswer('m', {}).complete({
      id: 'c',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    })) as any;
    expect(whole.usage).toEqual({
      input_tokens: 3,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 1,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 4,
    });
  });

  it("a failure mid-stream: the error event has code, message and param (null), the failed response an error code of the spec's list", () => {
    const a = new ResponsesAnswer('m', {});
    a.chunk(chunk({ content: 'x' }));
    const events = a.failed({
      message: 'upstream east failed',
      type: 'server_error',
      code: 'upstream_error',
      param: null,
    }) as any[];
    expect(events[0]).toMatchObject({
      type: 'error',
      code: 'upstream_error',
      message: 'upstream east failed',
      param: null,
    });
    expect(events[1].response.error).toEqual({ code: 'server_error', message: 'upstream east failed' });
    const limited = new ResponsesAnswer('m', {}).failed({
      message: 'slow down',
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
      param: null,
    }) as any[];
    expect(limited[limited.length - 1].response.error.code).toBe('rate_limit_exceeded');
  });

  it('marks an answer cut by the limit incomplete, streamed and not', async () => {
    const a = new ResponsesAnswer('m', {});
    const streamed = [
      ...a.chunk(chunk({ content: 'abc' })),
      ...a.chunk(chunk({}, 'length')),
      ...(await a.end({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })),
    ] as any[];
    expect(streamed[streamed.length - 1]).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });
    const whole = (await new ResponsesAnswer('m', {}).complete({
      id: 'c',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'abc' }, finish_reason: 'length' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    })) as any;
    expect(whole).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      usage: { input_tokens: 1, output_tokens: 1 },
    });
  });

  it('stores a finished response before answering it, and answers store: false when storing failed', async () => {
    const completion = {
      id: 'c',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    } as any;
    const saved: any[] = [];
    const ok = (await new ResponsesAnswer(
      'm',
      { store: true },
      async (r) => (saved.push(structuredClone(r)), true),
    ).complete(completion)) as any;
    expect(ok.store).toBe(true);
    expect(saved).toEqual([
      expect.objectContaining({
        id: ok.id,
        output: [
          expect.objectContaining({ type: 'function_call', id: expect.stringMatching(/^fc_/), call_id: 'call_9' }),
        ],
      }),
    ]);
    const failed = (await new ResponsesAnswer('m', { store: true }, async () => false).complete(completion)) as any;
    expect(failed.store).toBe(false);
    // store: false never calls the store.
    const never = jest.fn(async () => true);
    expect(((await new ResponsesAnswer('m', { store: false }, never).complete(completion)) as any).store).toBe(false);
    const streamed = new ResponsesAnswer('m', { store: false }, never);
    streamed.chunk(chunk({ content: 'x' }));
    await streamed.end({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });
    expect(never).not.toHaveBeenCalled();
    // A failed stream is not stored.
    const broken = new ResponsesAnswer('m', { store: true }, never);
    broken.chunk(chunk({ content: 'x' }));
    broken.failed({ message: 'boom', type: 'upstream_error' } as any);
    expect(never).not.toHaveBeenCalled();
  });

  it('keeps interleaved tool-call deltas (index 0, 1, 0) before each item’s done event, and both calls whole', async () => {
    const a = new ResponsesAnswer('m', {});
    const events: any[] = [
      ...a.chunk(
        chunk({
          tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'fa', arguments: '{"x":' } }],
        }),
      ),
      ...a.chunk(
        chunk({
          tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'fb', arguments: '{"y":' } }],
        }),
      ),
      ...a.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] })),
      ...a.chunk(chunk({ content: 'and text' })),
      ...a.chunk(chunk({ tool_calls: [{ index: 1, function: { arguments: '2}' } }] })),
      ...a.chunk(chunk({}, 'tool_calls')),
      ...(await a.end({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })),
    ];
    const closed = new Set<string>();
    for (const e of events) {
      const id = e.item_id ?? e.item?.id;
      if (e.type.endsWith('.delta') || e.type === 'response.output_item.added') expect(closed.has(id)).toBe(false);
      if (e.type === 'response.output_item.done') closed.add(id);
    }
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const done = events[events.length - 1].response;
    expect(
      done.output.filter((o: any) => o.type === 'function_call').map((o: any) => [o.call_id, o.arguments, o.status]),
    ).toEqual([
      ['call_a', '{"x":1}', 'completed'],
      ['call_b', '{"y":2}', 'completed'],
    ]);
  });

  it('ignores a tool_calls that is not an array (misbehaving upstream) instead of failing the answer', async () => {
    const a = new ResponsesAnswer('m', {});
    for (const bad of [{ index: 0 }, 'oops', 7, [null, 'x']]) {
      const res: any = await a.complete({
        id: 'c',
        object: 'chat.completion',
        created: 0,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi', tool_calls: bad }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      } as any);
      expect(res.output.map((o: any) => o.type)).toEqual(['message']);
    }
    const s = new ResponsesAnswer('m', {});
    expect(() => s.chunk(chunk({ tool_calls: { index: 0 } }))).not.toThrow();
    expect(s.chunk(chunk({ tool_calls: 'abc' })).map((e: any) => e.type)).toEqual([]);
  });
});

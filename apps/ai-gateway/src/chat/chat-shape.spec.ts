import { checkChatShape, checkUnknown } from './chat-shape';

describe('chat-shape: unknown fields are never a cost or routing lever, at any depth', () => {
  const refused: Array<[Record<string, unknown>, string]> = [
    [{ reasoning: { max_tokens: 100000 } }, 'reasoning'],
    [{ thinking: { type: 'enabled' } }, 'thinking'],
    [{ enable_thinking: true }, 'enable_thinking'],
    [{ thinking_budget: 30000 }, 'thinking_budget'],
    [{ extra_body: { thinking_budget: 30000 } }, 'extra_body'],
    [{ chat_template_kwargs: { enable_thinking: true } }, 'chat_template_kwargs'],
    [{ models: ['vendor-gpt-4', 'some/expensive-model'] }, 'models'],
    [{ route: 'fallback' }, 'route'],
    [{ provider: { order: ['x'] } }, 'provider'],
    [{ plugins: [{ id: 'web' }] }, 'plugins'],
    [{ transforms: ['middle-out'] }, 'transforms'],
    [{ search_parameters: { mode: 'on' } }, 'search_parameters'],
    [{ options: { num_predict: -1 } }, 'options'],
    // Nested: the name check applies to every key below the top level too.
    [{ future: { reasoning: { max_tokens: 100000 } } }, 'future.reasoning'],
    [{ future: { config: { max_tokens: 100000 } } }, 'future.config.max_tokens'],
    [{ vendor: { settings: { thinking: { type: 'enabled', budget: 1 } } } }, 'vendor.settings.thinking'],
    [{ vendor: { enable_thinking: true } }, 'vendor.enable_thinking'],
    [{ vendor: { thinking_budget: 30000 } }, 'vendor.thinking_budget'],
    [{ vendor: [{ a: 1 }, { extra_body: {} }] }, 'vendor.1.extra_body'],
    [{ vendor: { list: [[{ model: 'other' }]] } }, 'vendor.list.0.0.model'],
    [{ vendor: { search_parameters: { mode: 'on' } } }, 'vendor.search_parameters'],
    [{ vendor: { max_output_length: 9 } }, 'vendor.max_output_length'],
    [{ vendor: JSON.parse('{"__proto__": {"x": 1}}') }, 'vendor.__proto__'],
  ];

  it.each(refused)('%j -> 400 naming %s', (unknown, param) => {
    const e = checkUnknown(unknown);
    expect(e).toEqual({ param, message: expect.stringContaining(`${param}: unknown field not accepted`) });
  });

  it('harmless unknown fields, nested or not, still pass (forwarded per the deployment policy)', () => {
    expect(checkUnknown({ future_field: { mode: 'x', list: [1, 2, { colour: 'red' }] }, flag: true })).toBeNull();
  });

  it('the existing bounds still come first: depth and size', () => {
    const deep = (n: number): unknown => (n === 0 ? 1 : { a: deep(n - 1) });
    expect(checkUnknown({ d: deep(9) })?.message).toContain('nested deeper');
    expect(checkUnknown({ b: 'x'.repeat(40_000) })?.message).toContain('bytes of JSON');
  });
});

describe('chat-shape: known fields the gateway does not meter are refused', () => {
  const base = { model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] };

  it.each([
    [{ service_tier: 'priority' }, 'service_tier'],
    [{ service_tier: 'scale' }, 'service_tier'],
  ] as Array<[Record<string, unknown>, string]>)(
    '%j -> 400 naming %s, "not metered by this gateway"',
    (extra, param) => {
      expect(checkChatShape({ ...base, ...extra })).toEqual({
        param,
        message: expect.stringContaining('not metered by this gateway'),
      });
    },
  );

  it('service_tier auto/default/flex, text modality and null values stay allowed', () => {
    for (const service_tier of ['auto', 'default', 'flex', null])
      expect(checkChatShape({ ...base, service_tier })).toBeNull();
    expect(checkChatShape({ ...base, modalities: ['text'], audio: null, web_search_options: null })).toBeNull();
  });

  it('leaves web search and audio output to the model prices (chat-pricing.ts): the shape alone does not refuse them', () => {
    expect(checkChatShape({ ...base, web_search_options: { search_context_size: 'low' } })).toBeNull();
    expect(
      checkChatShape({ ...base, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }),
    ).toBeNull();
  });
});

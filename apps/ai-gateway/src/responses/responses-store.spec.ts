import { translateResponsesRequest } from './responses-request';
import { expandInput, referencesOf } from './responses-store';

describe('stored responses: references and expansion', () => {
  const call = { id: 'fc_1', type: 'function_call', status: 'completed', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' };

  it('finds item references and previous_response_id, refusing ids that are not bounded strings', () => {
    expect(referencesOf({ input: 'hi' })).toEqual({ items: [] });
    expect(referencesOf({ previous_response_id: 'resp_1', input: [{ role: 'user', content: 'x' }, { type: 'item_reference', id: 'fc_1' }] })).toEqual({ previousResponseId: 'resp_1', items: [{ index: 1, id: 'fc_1' }] });
    expect(() => referencesOf({ input: [{ type: 'item_reference', id: 7 }] })).toThrow(expect.objectContaining({ details: expect.objectContaining({ type: 'invalid_request_error' }) }));
    expect(() => referencesOf({ previous_response_id: 'x'.repeat(129) })).toThrow(expect.objectContaining({ details: expect.objectContaining({ type: 'invalid_request_error' }) }));
  });

  it('puts stored items in place of references and the previous response first; refusals name the caller’s own positions', () => {
    const refs = referencesOf({ previous_response_id: 'resp_1', input: [{ type: 'item_reference', id: 'fc_1' }, { type: 'function_call_output', call_id: 'call_1', output: 'sunny' }] });
    const resolved = expandInput([{ type: 'item_reference', id: 'fc_1' }, { type: 'function_call_output', call_id: 'call_1', output: 'sunny' }], refs, { input: [{ role: 'user', content: 'Weather?' }], output: [] }, new Map([['fc_1', call]]));
    expect(resolved.prefix).toBe(1);
    const { chat } = translateResponsesRequest({ model: 'm', previous_response_id: 'resp_1', input: [] }, { resolved, stored: true });
    expect(chat.messages).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ]);
    const bad = expandInput([{ role: 'tool', content: 'x' }], { items: [] }, { input: [{ role: 'user', content: 'a' }], output: [] }, new Map());
    expect(() => translateResponsesRequest({ model: 'm', input: [] }, { resolved: bad })).toThrow(expect.objectContaining({ details: expect.objectContaining({ param: 'input[0].role' }) }));
  });

  it('answers an unknown item like any other (no oracle), and bounds the expanded input', () => {
    const refs = { items: [{ index: 0, id: 'fc_other' }] };
    expect(() => expandInput([{ type: 'item_reference', id: 'fc_other' }], refs, undefined, new Map())).toThrow(expect.objectContaining({ message: "Item with id 'fc_other' not found." }));
    const many = Array.from({ length: 4000 }, () => ({ role: 'user', content: 'x' }));
    expect(() => expandInput(many, { items: [] }, { input: many, output: [] }, new Map())).toThrow(expect.objectContaining({ details: expect.objectContaining({ type: 'invalid_request_error' }) }));
  });
});

import { inputItemId, inputItemPosition, inputItemResource } from './input-item-resources';

describe('input item resources', () => {
  it('derives stable ids from the response id and the position, and reads the position back only for that response', () => {
    const id = inputItemId('resp_a', 7, { role: 'user', content: 'hi' });
    expect(id).toMatch(/^msg_[0-9a-f]{48}$/);
    expect(inputItemId('resp_a', 7, { role: 'user', content: 'hi' })).toBe(id);
    expect(inputItemId('resp_b', 7, { role: 'user', content: 'hi' })).not.toBe(id);
    expect(inputItemId('resp_a', 3, { type: 'function_call' })).toMatch(/^fc_/);
    expect(inputItemId('resp_a', 4, { type: 'function_call_output' })).toMatch(/^fco_/);
    expect(inputItemPosition('resp_a', id)).toBe(7);
    expect(inputItemPosition('resp_b', id)).toBeUndefined();
    // A made-up id with a valid shape names nothing.
    expect(inputItemPosition('resp_a', `msg_${'0'.repeat(40)}00000007`)).toBeUndefined();
    expect(inputItemPosition('resp_a', 'msg_1')).toBeUndefined();
  });

  it('shapes stored items as the item resources of the spec (id, type, status, parts)', () => {
    expect(inputItemResource({ role: 'user', content: 'hi' }, 'msg_1')).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_text', text: 'hi' }],
    });
    expect(
      inputItemResource(
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'see' },
            { type: 'input_image', image_url: 'https://x/a.png', detail: 'auto' },
          ],
        },
        'msg_2',
      ),
    ).toMatchObject({ content: [{ type: 'input_text' }, { type: 'input_image', detail: 'auto' }] });
    expect(inputItemResource({ role: 'assistant', content: 'ok' }, 'msg_3')).toEqual({
      id: 'msg_3',
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'ok', annotations: [], logprobs: [] }],
    });
    expect(inputItemResource({ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }, 'fc_1')).toEqual({
      id: 'fc_1',
      type: 'function_call',
      status: 'completed',
      call_id: 'c',
      name: 'f',
      arguments: '{}',
    });
    expect(inputItemResource({ type: 'function_call_output', call_id: 'c', output: 'x' }, 'fco_1')).toEqual({
      id: 'fco_1',
      type: 'function_call_output',
      status: 'completed',
      call_id: 'c',
      output: 'x',
    });
  });
});

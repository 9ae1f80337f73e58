import { Clock } from '@app/platform';
import { GatewayError } from '../errors';
import { translateResponsesRequest } from './responses-request';
import { expandInput, referencesOf, ResponsesRepository } from './responses.repository';

describe('stored responses: references and expansion', () => {
  const call = {
    id: 'fc_1',
    type: 'function_call',
    status: 'completed',
    call_id: 'call_1',
    name: 'get_weather',
    arguments: '{"city":"Paris"}',
  };

  it('finds item references and previous_response_id, refusing ids that are not bounded strings', () => {
    expect(referencesOf({ input: 'hi' })).toEqual({ items: [] });
    expect(
      referencesOf({
        previous_response_id: 'resp_1',
        input: [
          { role: 'user', content: 'x' },
          { type: 'item_reference', id: 'fc_1' },
        ],
      }),
    ).toEqual({ previousResponseId: 'resp_1', items: [{ index: 1, id: 'fc_1' }] });
    expect(() => referencesOf({ input: [{ type: 'item_reference', id: 7 }] })).toThrow(
      expect.objectContaining({ type: 'invalid_request_error' }),
    );
    expect(() => referencesOf({ previous_response_id: 'x'.repeat(129) })).toThrow(
      expect.objectContaining({ type: 'invalid_request_error' }),
    );
  });

  it('puts stored items in place of references and the previous response first; refusals name the caller’s own positions', () => {
    const refs = referencesOf({
      previous_response_id: 'resp_1',
      input: [
        { type: 'item_reference', id: 'fc_1' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
      ],
    });
    const resolved = expandInput(
      [
        { type: 'item_reference', id: 'fc_1' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
      ],
      refs,
      { input: [{ role: 'user', content: 'Weather?' }], output: [] },
      new Map([['fc_1', call]]),
    );
    expect(resolved.prefix).toBe(1);
    const { chat } = translateResponsesRequest(
      { model: 'm', previous_response_id: 'resp_1', input: [] },
      { resolved, stored: true },
    );
    expect(chat.messages).toEqual([
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ]);
    const bad = expandInput(
      [{ role: 'tool', content: 'x' }],
      { items: [] },
      { input: [{ role: 'user', content: 'a' }], output: [] },
      new Map(),
    );
    expect(() => translateResponsesRequest({ model: 'm', input: [] }, { resolved: bad })).toThrow(
      expect.objectContaining({ param: 'input[0].role' }),
    );
  });

  it('answers an unknown item like any other (no oracle), and bounds the expanded input', () => {
    const refs = { items: [{ index: 0, id: 'fc_other' }] };
    expect(() => expandInput([{ type: 'item_reference', id: 'fc_other' }], refs, undefined, new Map())).toThrow(
      expect.objectContaining({ message: "Item with id 'fc_other' not found." }),
    );
    const many = Array.from({ length: 4000 }, () => ({ role: 'user', content: 'x' }));
    expect(() => expandInput(many, { items: [] }, { input: many, output: [] }, new Map())).toThrow(
      expect.objectContaining({ type: 'invalid_request_error' }),
    );
  });
});

describe('ResponsesRepository.resolve: odd ids and database failures', () => {
  const config = { AI_RESPONSES_STORE_TTL_HOURS: 1, AI_RESPONSES_STORE_MAX_BYTES: 1 << 20 } as any;
  const status = (e: any) => ({ status: e.getStatus(), ...e.getResponse() });

  it('answers an id with a NUL (or any character ours never have) like an unknown id, without a query', async () => {
    const db = { query: jest.fn(async () => []) };
    const store = new ResponsesRepository(db as any, config, {} as any, new Clock());
    const prev: any = await store.resolve('key1', { previous_response_id: 'resp_\u0000', input: 'hi' }).catch((e) => e);
    expect(prev).toBeInstanceOf(GatewayError);
    expect(status(prev)).toMatchObject({
      status: 400,
      param: 'previous_response_id',
      errorCode: 'previous_response_not_found',
    });
    const item: any = await store
      .resolve('key1', {
        input: [
          { role: 'user', content: 'x' },
          { type: 'item_reference', id: 'fc_\u0000x' },
        ],
      })
      .catch((e) => e);
    expect(status(item)).toMatchObject({ status: 400, param: 'input[1]' });
    expect(db.query).not.toHaveBeenCalled();
  });

  it('turns a database failure into a 503 in the OpenAI shape without the driver text', async () => {
    const db = {
      query: jest.fn(async () => Promise.reject(new Error('invalid byte sequence for encoding "UTF8": 0x00'))),
    };
    const store = new ResponsesRepository(db as any, config, {} as any, new Clock());
    for (const body of [
      { previous_response_id: 'resp_1', input: 'hi' },
      { input: [{ type: 'item_reference', id: 'fc_1' }] },
    ]) {
      const e: any = await store.resolve('key1', body).catch((x) => x);
      expect(e).toBeInstanceOf(GatewayError);
      expect(status(e)).toMatchObject({ status: 503, type: 'service_unavailable' });
      expect(status(e).message).not.toMatch(/byte sequence/);
    }
  });
});

import { randomBytes } from 'crypto';
import type { Principal } from '@app/auth';
import { RunningApp, startGateway } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { GatewayErrorCode } from '../errors';
import { ApiKeysService } from '../keys/api-keys.service';
import { apiKeyPrincipal } from '../keys/gateway.authenticator';
import { ResponsesRepository } from './responses.repository';
import { StoredResponses } from './stored-responses.service';

// The real service on a real database (test/support/apps.ts): responses are stored as POST /v1/responses
// stores them (ResponsesRepository.save), for keys as the authenticator resolves them.
describe('StoredResponses', () => {
  let app: RunningApp;
  let stored: StoredResponses;
  let owner: Principal;
  let stranger: Principal;
  const input = ['one', 'two', 'three', 'four', 'five'].map((text) => ({ role: 'user', content: text }));
  const keyWith = async (scopes: string[] | null) => {
    const keys = app.app.get(ApiKeysService);
    const created = await keys.create(
      { name: 'stored responses spec', scopes },
      { actor: { kind: 'system', id: null }, requestId: null, address: null },
    );
    return apiKeyPrincipal(await keys.resolve(created.key));
  };
  /** A finished response of `principal`, stored with the five-item input. */
  const store = async (principal: Principal) => {
    const id = `resp_${randomBytes(24).toString('hex')}`;
    const response = {
      id,
      object: 'response',
      status: 'completed',
      model: 'm',
      output: [
        {
          id: `msg_${randomBytes(8).toString('hex')}`,
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'done', annotations: [] }],
        },
      ],
    };
    expect(await app.app.get(ResponsesRepository).save(principal.id, response, input)).toBe(true);
    return response;
  };
  const texts = (page: Record<string, unknown>) =>
    (page.data as Array<{ content: Array<{ text: string }> }>).map((i) => i.content[0].text);

  beforeAll(async () => {
    app = await startGateway({ LOG_LEVEL: 'silent' });
    stored = app.app.get(StoredResponses);
    owner = await keyWith(['chat']);
    stranger = await keyWith(null);
  });
  afterAll(() => app?.close());

  it("retrieves the key's stored Response object with its output; another key's and an expired response are not found alike", async () => {
    const response = await store(owner);
    expect(await stored.retrieve(owner, response.id, {})).toEqual(response);
    await expect(stored.retrieve(stranger, response.id, {})).rejects.toMatchObject({
      code: GatewayErrorCode.ResponseNotFound,
      param: 'response_id',
    });
    await queryRows(app.dbUrl, `UPDATE ai_responses SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      response.id,
    ]);
    await expect(stored.retrieve(owner, response.id, {})).rejects.toMatchObject({
      code: GatewayErrorCode.ResponseNotFound,
    });
  });

  it('accepts the query values it can honour and refuses the others naming the parameter, before any read', async () => {
    const response = await store(owner);
    const accepted = { stream: 'false', starting_after: '3', include_obfuscation: 'true', 'include[]': ['a', 'b'] };
    expect(await stored.retrieve(owner, response.id, accepted)).toMatchObject({ id: response.id });
    const refused: Array<[Record<string, unknown>, GatewayErrorCode, string]> = [
      [{ stream: 'true' }, GatewayErrorCode.UnsupportedParameter, 'stream'],
      [{ stream: 'yes' }, GatewayErrorCode.InvalidType, 'stream'],
      [{ stream: ['false', 'true'] }, GatewayErrorCode.InvalidType, 'stream'],
      [{ starting_after: '-1' }, GatewayErrorCode.InvalidType, 'starting_after'],
      [{ include: Array.from({ length: 17 }, () => 'x') }, GatewayErrorCode.InvalidValue, 'include'],
    ];
    for (const [q, code, param] of refused) {
      // An unknown id: a refusal of the query is answered before the store is asked.
      const error = await stored.retrieve(owner, 'resp_unknown', q).catch((e) => e);
      expect([q, error.code, error.param]).toEqual([q, code, param]);
    }
  });

  it('deletes a response of the key once; another key cannot delete it', async () => {
    const response = await store(owner);
    await expect(stored.delete(stranger, response.id)).rejects.toMatchObject({
      code: GatewayErrorCode.ResponseNotFound,
    });
    expect(await stored.delete(owner, response.id)).toEqual({ id: response.id, object: 'response', deleted: true });
    await expect(stored.delete(owner, response.id)).rejects.toMatchObject({ code: GatewayErrorCode.ResponseNotFound });
    await expect(stored.retrieve(owner, response.id, {})).rejects.toMatchObject({
      code: GatewayErrorCode.ResponseNotFound,
    });
  });

  it('pages input items last first by default, or first first; has_more is false on the page that reaches an end', async () => {
    const { id } = await store(owner);
    const first = await stored.inputItems(owner, id, { limit: '2' });
    expect([texts(first), first.has_more]).toEqual([['five', 'four'], true]);
    const second = await stored.inputItems(owner, id, { limit: '2', after: first.last_id });
    expect([texts(second), second.has_more]).toEqual([['three', 'two'], true]);
    const third = await stored.inputItems(owner, id, { limit: '2', after: second.last_id });
    expect([texts(third), third.has_more]).toEqual([['one'], false]);
    expect(third.first_id).toBe(third.last_id);

    const all = await stored.inputItems(owner, id, { order: 'asc', limit: '5' });
    expect([texts(all), all.has_more]).toEqual([['one', 'two', 'three', 'four', 'five'], false]);
    expect(all.first_id).toBe(third.first_id);
    const past = await stored.inputItems(owner, id, { order: 'asc', after: all.last_id });
    expect(past).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
  });

  it('refuses a bad limit, order or after naming it, an unknown response as not found, and a key without the chat scope on every read', async () => {
    const { id } = await store(owner);
    const foreign = await stored.inputItems(owner, (await store(owner)).id, {});
    for (const [q, param] of [
      [{ limit: '0' }, 'limit'],
      [{ limit: '101' }, 'limit'],
      [{ limit: '1.5' }, 'limit'],
      [{ order: 'up' }, 'order'],
      [{ after: foreign.first_id }, 'after'],
    ] as const) {
      const error = await stored.inputItems(owner, id, q).catch((e) => e);
      expect([q, error.status, error.param]).toEqual([q, 400, param]);
    }
    await expect(stored.inputItems(owner, 'resp_unknown', {})).rejects.toMatchObject({
      code: GatewayErrorCode.ResponseNotFound,
    });

    const visionOnly = await keyWith(['vision']);
    for (const read of [
      () => stored.retrieve(visionOnly, id, {}),
      () => stored.delete(visionOnly, id),
      () => stored.inputItems(visionOnly, id, {}),
    ])
      await expect(read()).rejects.toMatchObject({ code: GatewayErrorCode.ScopeNotAllowed, status: 403 });
    expect(await stored.retrieve(owner, id, {})).toMatchObject({ id });
  });
});

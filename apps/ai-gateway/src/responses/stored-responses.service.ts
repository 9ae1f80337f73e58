import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { assertScope } from '../keys/key-scopes';
import { inputItemId, inputItemPosition, inputItemResource } from './input-item-resources';
import { invalid } from './responses-request';
import { ResponsesRepository } from './responses.repository';

type Obj = Record<string, unknown>;
type Query = Record<string, unknown>;

export const INPUT_ITEMS_DEFAULT_LIMIT = 20;
export const INPUT_ITEMS_MAX_LIMIT = 100;
/** `include` values accepted per request (the spec's enum has 8). */
const MAX_INCLUDE = 16;

/** One query value: a repeated parameter (`?a=1&a=2`) is refused rather than one of its values guessed. */
function single(q: Query, name: string): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalid(`${name} must be given once`, name, GatewayErrorCode.InvalidType);
  return v;
}

function booleanParam(q: Query, name: string): boolean | undefined {
  const v = single(q, name);
  if (v === undefined) return undefined;
  if (v !== 'true' && v !== 'false') throw invalid(`${name} must be true or false`, name, GatewayErrorCode.InvalidType);
  return v === 'true';
}

/**
 * `include` (as `include[]=...`, what the openai SDKs send, or `include=...`): accepted and answered
 * without additions, as the values name data of hosted tools, log probabilities and encrypted reasoning
 * that a chat upstream never produced (input image URLs are in the stored items already).
 */
function checkInclude(q: Query): void {
  for (const name of ['include', 'include[]']) {
    const v = q[name];
    if (v === undefined) continue;
    const values = Array.isArray(v) ? v : [v];
    if (values.length > MAX_INCLUDE || !values.every((x) => typeof x === 'string' && x.length <= 100))
      throw invalid(`include must be at most ${MAX_INCLUDE} include values`, 'include');
  }
}

/**
 * GET /v1/responses/{id}, DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items: what a key
 * with the chat scope stored with POST /v1/responses and that has not expired. An unknown, expired or
 * another key's id is the same 404 (no oracle for other keys' ids).
 */
@Injectable()
export class StoredResponses {
  constructor(private readonly store: ResponsesRepository) {}

  /**
   * The stored Response object as it was answered. `stream=true` (a replay of the events) is refused:
   * nothing is kept of a stream but its final response; `starting_after` only means something with it.
   */
  async retrieve(principal: Principal, id: string, q: Query): Promise<Obj> {
    assertScope(principal, 'chat');
    if (booleanParam(q, 'stream') === true)
      throw invalid(
        'stream=true is not supported: stored responses are finished and their events are not kept; retrieve without stream to get the Response object',
        'stream',
        GatewayErrorCode.UnsupportedParameter,
      );
    const after = single(q, 'starting_after');
    if (after !== undefined && !/^\d{1,9}$/.test(after))
      throw invalid('starting_after must be a non-negative integer', 'starting_after', GatewayErrorCode.InvalidType);
    booleanParam(q, 'include_obfuscation');
    checkInclude(q);
    const response = await this.store.retrieve(principal.id, id);
    if (!response) throw new GatewayError(GatewayErrorCode.ResponseNotFound, { id });
    return response;
  }

  /** Deletes the response and its items; its bytes leave the key's stored total (AI_RESPONSES_STORE_MAX_BYTES_PER_KEY). */
  async delete(principal: Principal, id: string): Promise<Obj> {
    assertScope(principal, 'chat');
    if (!(await this.store.delete(principal.id, id))) throw new GatewayError(GatewayErrorCode.ResponseNotFound, { id });
    return { id, object: 'response', deleted: true };
  }

  /**
   * One page of the response's input items (as forwarded upstream, previous_response_id's items first):
   * `limit` 1 to 100 (default 20), `order` desc (default, last item first) or asc, `after` an item id of
   * this response's input (the page starts after it). Only the page's items leave the database (which unpacks the stored input once per page; its count is a column).
   */
  async inputItems(principal: Principal, id: string, q: Query): Promise<Obj> {
    assertScope(principal, 'chat');
    const limitText = single(q, 'limit');
    let limit = INPUT_ITEMS_DEFAULT_LIMIT;
    if (limitText !== undefined) {
      if (!/^\d{1,4}$/.test(limitText))
        throw invalid(
          `limit must be an integer from 1 to ${INPUT_ITEMS_MAX_LIMIT}`,
          'limit',
          GatewayErrorCode.InvalidType,
        );
      limit = Number(limitText);
      if (limit < 1 || limit > INPUT_ITEMS_MAX_LIMIT)
        throw invalid(`limit must be an integer from 1 to ${INPUT_ITEMS_MAX_LIMIT}`, 'limit');
    }
    const order = single(q, 'order') ?? 'desc';
    if (order !== 'asc' && order !== 'desc') throw invalid('order must be asc or desc', 'order');
    const afterId = single(q, 'after');
    checkInclude(q);

    const count = await this.store.inputCount(principal.id, id);
    if (count === undefined) throw new GatewayError(GatewayErrorCode.ResponseNotFound, { id });
    let start: number;
    if (afterId === undefined) start = order === 'asc' ? 0 : count - 1;
    else {
      const at = inputItemPosition(id, afterId);
      if (at === undefined || at >= count)
        throw invalid(`after: no input item with id '${afterId}' in response '${id}'`, 'after');
      start = order === 'asc' ? at + 1 : at - 1;
    }
    const step = order === 'asc' ? 1 : -1;
    const positions: number[] = [];
    for (let p = start; p >= 0 && p < count && positions.length < limit; p += step) positions.push(p);
    const last = positions[positions.length - 1];
    const hasMore = positions.length > 0 && last + step >= 0 && last + step < count;

    const rows = await this.store.inputItems(principal.id, id, positions);
    if (!rows) throw new GatewayError(GatewayErrorCode.ResponseNotFound, { id });
    const data = rows.map((r) => inputItemResource(r.item, inputItemId(id, r.position, r.item)));
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
      has_more: hasMore,
    };
  }
}

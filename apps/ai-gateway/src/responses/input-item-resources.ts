// Stored input items (responses-request.ts keeps them as they were forwarded: messages as
// `{role, content}`, calls and outputs with their forwarded fields) as the item resources of
// GET /v1/responses/{id}/input_items, each with an `id` and a `type`.
//
// Input items are stored without ids; each gets one derived from its response's id and its position:
// `<prefix>_<40 hex of sha256(response id ":" position)><position as 8 hex>`. The same item has the same
// id at every read on every replica, ids of different responses never meet, and the `after` cursor
// names its position directly (checked against the hash, so a made-up id names nothing).
import { createHash } from 'crypto';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const ITEM_ID = /^[a-z]{1,8}_([0-9a-f]{40})([0-9a-f]{8})$/;

function hashOf(responseId: string, position: number): string {
  return createHash('sha256').update(`${responseId}:${position}`).digest('hex').slice(0, 40);
}

function prefixOf(item: unknown): string {
  const type = isObj(item) ? (item.type ?? (item.role !== undefined ? 'message' : undefined)) : undefined;
  if (type === 'message') return 'msg';
  if (type === 'function_call') return 'fc';
  if (type === 'function_call_output') return 'fco';
  return 'item';
}

/** The id of the input item at `position` of response `responseId`. */
export function inputItemId(responseId: string, position: number, item: unknown): string {
  return `${prefixOf(item)}_${hashOf(responseId, position)}${position.toString(16).padStart(8, '0')}`;
}

/** The position an input item id of `responseId` names, or undefined when it is no id of that response's items. */
export function inputItemPosition(responseId: string, id: string): number | undefined {
  const m = ITEM_ID.exec(id);
  if (!m) return undefined;
  const position = parseInt(m[2], 16);
  return hashOf(responseId, position) === m[1] ? position : undefined;
}

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content
          .map((p) =>
            isObj(p) && typeof p.text === 'string'
              ? p.text
              : isObj(p) && typeof p.refusal === 'string'
                ? p.refusal
                : '',
          )
          .join('')
      : '';

/**
 * A stored input item as an item resource: user, system and developer messages with `input_text` /
 * `input_image` / `input_file` parts, assistant messages with one `output_text` part, function calls
 * and their outputs, each `completed` (they are part of a finished response). Anything else (rows of an
 * older layout) keeps its fields, with the id and a type.
 */
export function inputItemResource(item: unknown, id: string): Obj {
  if (!isObj(item))
    return {
      id,
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_text', text: typeof item === 'string' ? item : JSON.stringify(item ?? '') }],
    };
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  switch (type) {
    case 'message':
      if (item.role === 'assistant')
        return {
          id,
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: textOf(item.content), annotations: [], logprobs: [] }],
        };
      return {
        id,
        type: 'message',
        role: item.role,
        status: 'completed',
        content: typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : item.content,
      };
    case 'function_call':
      return {
        id,
        type: 'function_call',
        status: 'completed',
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
      };
    case 'function_call_output':
      return { id, type: 'function_call_output', status: 'completed', call_id: item.call_id, output: item.output };
    default:
      return { ...item, id, type: type ?? 'message' };
  }
}

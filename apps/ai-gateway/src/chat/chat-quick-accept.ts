import { bool, Check, fields, int, isObject, num, str } from '../http/quick-checks';

const ROLES = new Set(['developer', 'system', 'user', 'assistant']);
const MESSAGE: Record<string, Check> = {
  role: (v) => typeof v === 'string' && ROLES.has(v),
  content: (v) => typeof v === 'string',
  name: str(1, 64),
};
const STREAM_OPTIONS: Record<string, Check> = { include_usage: bool };

const CHAT: Record<string, Check> = {
  model: str(1, 128),
  messages: (v) =>
    Array.isArray(v) &&
    v.length >= 1 &&
    v.length <= 4096 &&
    v.every((m) => isObject(m) && fields(m, MESSAGE, ['role', 'content'])),
  temperature: num(0, 2),
  max_tokens: int(1, Number.MAX_SAFE_INTEGER),
  max_completion_tokens: int(1, Number.MAX_SAFE_INTEGER),
  stream: bool,
  stream_options: (v) => isObject(v) && fields(v, STREAM_OPTIONS, []),
  top_p: num(0, 1),
  frequency_penalty: num(-2, 2),
  presence_penalty: num(-2, 2),
  n: int(1, 8),
  user: str(0, 256),
};

/** ChatCompletionRequest, common shape only. */
export function quickAcceptChat(body: unknown): boolean {
  return isObject(body) && fields(body, CHAT, ['model', 'messages']);
}

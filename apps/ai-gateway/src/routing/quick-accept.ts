// Conservative fast checks for the hot request bodies: `true` only for bodies the class-validator DTO
// accepts too (a subset of them: plain common fields, no nulls); anything else returns false and goes
// through the validation pipe, which gives the real answer and its error messages. Lengths are checked
// in UTF-16 units, which is never less than the code-point count class-validator uses.
// test: apps/ai-gateway/src/routing/quick-accept.spec.ts compares both on generated bodies.

import { MAX_EMBEDDING_INPUTS } from '../embeddings/dtos/embeddings.dtos';

type Check = (v: unknown) => boolean;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (min: number, max: number): Check => (v) => typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;
const int = (min: number, max: number): Check => (v) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
const bool: Check = (v) => typeof v === 'boolean';
const str = (min: number, max: number): Check => (v) => typeof v === 'string' && v.length >= min && v.length <= max;

/** Every own key of `o` has a check and passes it; required keys are present. */
function fields(o: Record<string, unknown>, checks: Record<string, Check>, required: readonly string[]): boolean {
  for (const k of required) if (!(k in o)) return false;
  for (const k in o) {
    const check = checks[k];
    if (check === undefined || !Object.prototype.hasOwnProperty.call(checks, k) || !check(o[k])) return false;
  }
  return true;
}

const ROLES = new Set(['developer', 'system', 'user', 'assistant']);
const MESSAGE: Record<string, Check> = {
  role: (v) => typeof v === 'string' && ROLES.has(v),
  content: (v) => typeof v === 'string',
  name: str(1, 64),
};
const STREAM_OPTIONS: Record<string, Check> = { include_usage: bool };

const CHAT: Record<string, Check> = {
  model: str(1, 128),
  messages: (v) => Array.isArray(v) && v.length >= 1 && v.length <= 4096 && v.every((m) => isObject(m) && fields(m, MESSAGE, ['role', 'content'])),
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

const EMBEDDINGS: Record<string, Check> = {
  model: str(1, 128),
  input: (v) => (typeof v === 'string' ? v.length > 0 : Array.isArray(v) && v.length >= 1 && v.length <= MAX_EMBEDDING_INPUTS && v.every((s) => typeof s === 'string' && s.length > 0)),
  encoding_format: (v) => v === 'float' || v === 'base64',
  dimensions: int(1, 8192),
  user: str(0, 256),
};

/** EmbeddingsRequest, common shape only. */
export function quickAcceptEmbeddings(body: unknown): boolean {
  return isObject(body) && fields(body, EMBEDDINGS, ['model', 'input']);
}

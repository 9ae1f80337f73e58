import { Check, fields, int, isObject, str } from '../http/quick-checks';
import { MAX_EMBEDDING_INPUTS } from './dtos/embeddings.dto';

const EMBEDDINGS: Record<string, Check> = {
  model: str(1, 128),
  input: (v) =>
    typeof v === 'string'
      ? v.length > 0
      : Array.isArray(v) &&
        v.length >= 1 &&
        v.length <= MAX_EMBEDDING_INPUTS &&
        v.every((s) => typeof s === 'string' && s.length > 0),
  encoding_format: (v) => v === 'float' || v === 'base64',
  dimensions: int(1, 8192),
  user: str(0, 256),
};

/** EmbeddingsRequest, common shape only. */
export function quickAcceptEmbeddings(body: unknown): boolean {
  return isObject(body) && fields(body, EMBEDDINGS, ['model', 'input']);
}

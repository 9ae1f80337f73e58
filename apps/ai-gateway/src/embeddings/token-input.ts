/**
 * Token-array embeddings inputs (`input` as `integer[]` or `integer[][]`, OpenAI's CreateEmbeddingRequest):
 * the shape checks done before the model is known, and the normalization to one id list per input.
 */
import { MAX_EMBEDDING_INPUTS } from './dtos/embeddings.dto';

/** OpenAI's cap on the tokens of all inputs of one embeddings request (its API reference). */
export const MAX_EMBEDDING_REQUEST_TOKENS = 300_000;

export interface InputProblem {
  param: string;
  message: string;
}

/** Whether `input` is a token array or an array of them (its first item decides; the check then holds every item to it). */
export function isTokenInput(input: unknown): input is number[] | number[][] {
  return Array.isArray(input) && input.length > 0 && (typeof input[0] === 'number' || Array.isArray(input[0]));
}

/** The inputs as one id list each: `[1, 2]` is one input, `[[1, 2], [3]]` two. */
export function tokenInputs(input: number[] | number[][]): number[][] {
  return typeof input[0] === 'number' ? [input as number[]] : (input as number[][]);
}

const tokenId = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** The first problem of a token-array `input` (see isTokenInput), naming the input it is in, or null. */
export function tokenInputProblem(input: number[] | number[][]): InputProblem | null {
  if (input.length > MAX_EMBEDDING_INPUTS)
    return { param: 'input', message: `input: at most ${MAX_EMBEDDING_INPUTS} items` };
  if (typeof input[0] === 'number') {
    const bad = input.findIndex((v) => !tokenId(v));
    return bad < 0 ? null : { param: `input[${bad}]`, message: `input[${bad}]: a token id must be an integer >= 0` };
  }
  let total = 0;
  for (let i = 0; i < input.length; i++) {
    const ids = input[i];
    if (!Array.isArray(ids) || ids.length === 0)
      return {
        param: `input[${i}]`,
        message: `input[${i}]: must be a non-empty array of token ids, as the other inputs`,
      };
    const bad = ids.findIndex((v) => !tokenId(v));
    if (bad >= 0) return { param: `input[${i}]`, message: `input[${i}][${bad}]: a token id must be an integer >= 0` };
    total += ids.length;
  }
  if (total > MAX_EMBEDDING_REQUEST_TOKENS)
    return {
      param: 'input',
      message: `input: ${total} tokens in all; at most ${MAX_EMBEDDING_REQUEST_TOKENS} per request`,
    };
  return null;
}

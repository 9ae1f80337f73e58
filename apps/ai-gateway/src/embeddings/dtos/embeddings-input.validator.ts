import { ValidateBy, ValidationOptions } from 'class-validator';

/**
 * Embeddings `input`: a non-empty string, 1 to `max` non-empty strings, or token arrays of integers >= 0
 * (tokenInputProblem, token-input.ts, names the offending item before this runs; the model's vocabulary is
 * checked by the use case).
 */
export function IsEmbeddingsInput(max: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isEmbeddingsInput',
      validator: {
        validate: (v: unknown) => {
          if (typeof v === 'string') return v.length > 0;
          if (!Array.isArray(v) || v.length === 0 || v.length > max) return false;
          if (typeof v[0] === 'string') return v.every((s) => typeof s === 'string' && s.length > 0);
          if (typeof v[0] === 'number') return v.every((n) => Number.isInteger(n) && n >= 0);
          return v.every((a) => Array.isArray(a) && a.length > 0 && a.every((n) => Number.isInteger(n) && n >= 0));
        },
        defaultMessage: (args) =>
          `${args?.property} must be a non-empty string, an array of 1 to ${max} non-empty strings, an array of token ids (integers >= 0) or an array of non-empty token-id arrays`,
      },
    },
    options,
  );
}

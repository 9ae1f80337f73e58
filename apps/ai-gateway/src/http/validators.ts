import { ValidateBy, ValidationOptions } from 'class-validator';

/** A string, or an array of at most `max` strings (OpenAI `stop`, embeddings `input`). */
export function IsStringOrStringArray(
  max: number,
  options?: ValidationOptions & { nonEmpty?: boolean },
): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStringOrStringArray',
      validator: {
        validate: (v: unknown) => {
          const ok = (s: unknown) => typeof s === 'string' && (!options?.nonEmpty || s.length > 0);
          if (Array.isArray(v)) return v.length > 0 && v.length <= max && v.every(ok);
          return ok(v);
        },
        defaultMessage: (args) =>
          `${args?.property} must be ${options?.nonEmpty ? 'a non-empty string' : 'a string'} or an array of 1 to ${max} ${options?.nonEmpty ? 'non-empty strings' : 'strings'}`,
      },
    },
    options,
  );
}

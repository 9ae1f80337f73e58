import { ValidateBy, ValidationOptions } from 'class-validator';

/**
 * At most `places` decimals. class-validator's own `maxDecimalPlaces` throws on numbers JavaScript
 * prints in exponent form (1e-7), which turned such input into a 500.
 */
export function MaxDecimalPlaces(places: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxDecimalPlaces',
      constraints: [places],
      validator: {
        validate: (value: unknown) =>
          typeof value !== 'number' || (Number.isFinite(value) && Number(value.toFixed(places)) === value),
        defaultMessage: (args) => `${args?.property} must have at most ${places} decimal places`,
      },
    },
    options,
  );
}

/**
 * A `cursor` query parameter: a `next_cursor` this API answered. `decode` reads one (null for any other text), so a
 * made-up or altered cursor is a 400 naming the parameter, never a query.
 */
export function IsCursor(decode: (text: string) => unknown, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'cursor',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && decode(value) !== null,
        defaultMessage: () => 'cursor must be a next_cursor this API answered',
      },
    },
    options,
  );
}

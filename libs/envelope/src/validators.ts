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

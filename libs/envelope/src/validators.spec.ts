import { validateSync } from 'class-validator';
import { MaxDecimalPlaces } from './validators';

class Money {
  @MaxDecimalPlaces(6)
  amount: unknown;
}

const errorsFor = (amount: unknown) => validateSync(Object.assign(new Money(), { amount })).length;

describe('MaxDecimalPlaces', () => {
  it('accepts up to the allowed decimals', () => {
    for (const v of [0, 10, 1.5, 0.000001, 123.456789]) expect(errorsFor(v)).toBe(0);
  });
  it('refuses more decimals, exponent forms included, without throwing', () => {
    for (const v of [0.0000001, 1e-7, 2e-323, 5e-324, 1.2345678]) expect(errorsFor(v)).toBe(1);
  });
});

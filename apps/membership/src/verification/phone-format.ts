import { registerDecorator, ValidationOptions } from 'class-validator';

/** Mainland China mobile numbers by default; PHONE_PATTERN changes it at boot. */
export const DEFAULT_PHONE_PATTERN = '^1[3-9]\\d{9}$';

let phonePattern = new RegExp(DEFAULT_PHONE_PATTERN);

export function setPhonePattern(pattern: string): void {
  phonePattern = new RegExp(pattern);
}

export function isPhone(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 32 && phonePattern.test(value);
}

/** class-validator decorator for the configured phone format. */
export function IsPhone(options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isPhone',
      target: object.constructor,
      propertyName,
      options: { message: `${propertyName} must be a mobile number matching ${phonePattern.source}`, ...options },
      validator: { validate: (value: unknown) => isPhone(value) },
    });
}

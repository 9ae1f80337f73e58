import { ValidationError, ValidationPipe } from '@nestjs/common';
import { BusinessException } from './business.exception';
import { ErrorCode } from './error-code';
import { hasMessage, Locale, LocalizedText, MessageParams, SOURCE_LOCALE, translate } from './i18n';
import { installLinearGetKeys } from './class-transformer-keys';

// Before any pipe of either app turns a body into its DTO: class-transformer's key lookup, made linear.
installLinearGetKeys();

/**
 * At most this many failing fields are reported (the rest are counted): a body of 95 000 unknown fields was
 * answered with 10 MB naming each of them.
 */
export const MAX_REPORTED_FIELD_ERRORS = 20;

export interface FieldError {
  field: string;
  message: string;
  /** class-validator constraint name (`isEmail`, `whitelistValidation`, a custom constraint's name). */
  constraint?: string;
  /** Parameters of the constraint's catalog text (`validation.<constraint>`). */
  params?: MessageParams;
}

/**
 * The failing fields of `errors`, depth first, at most `max` of them (MAX_REPORTED_FIELD_ERRORS); `omitted`
 * counts the failures left out.
 */
export function flattenValidationErrors(
  errors: ValidationError[],
  max = MAX_REPORTED_FIELD_ERRORS,
): FieldError[] & { omitted: number } {
  const out = Object.assign([] as FieldError[], { omitted: 0 });
  const walk = (list: ValidationError[], parent: string) => {
    for (const e of list) {
      const field = parent ? `${parent}.${e.property}` : e.property;
      for (const [constraint, msg] of Object.entries(e.constraints ?? {})) {
        if (out.length < max) out.push({ field, message: msg, constraint });
        else out.omitted++;
      }
      if (e.children?.length) walk(e.children, field);
    }
  };
  walk(errors, '');
  return out;
}

/** The options both apps' validation pipes share (whitelisting, transformation, every error at once). */
export const validationPipeOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  stopAtFirstError: false,
  validationError: { target: false, value: false },
} as const;

/**
 * The 10000 envelope message: `field: problem` per failing field. English keeps each validator's own
 * text; another language names each field with the catalog's text for its constraint
 * (`validation.<constraint>`, else `validation.invalid`).
 */
export class FieldErrorsText implements LocalizedText {
  /** `omitted`: failing fields not listed (MAX_REPORTED_FIELD_ERRORS), counted at the end of the text. */
  constructor(
    readonly fields: FieldError[],
    readonly omitted = 0,
  ) {}

  render(locale: Locale): string {
    if (!this.fields.length) return translate(locale, 'code.10000');
    const more = this.omitted > 0 ? [translate(locale, 'validation.more', { count: this.omitted })] : [];
    if (locale === SOURCE_LOCALE) return [...this.fields.map((f) => `${f.field}: ${f.message}`), ...more].join('; ');
    return this.fields
      .map((f) => {
        const key = `validation.${f.constraint ?? ''}`;
        const problem = translate(locale, hasMessage(key) ? key : 'validation.invalid', {
          field: f.field,
          ...f.params,
        });
        return translate(locale, 'validation.field', { field: f.field, message: problem });
      })
      .concat(more)
      .join(translate(locale, 'validation.separator'));
  }
}

/** One field's 10000 from domain code: `field: message` in English, the catalog's `validation.<constraint>` otherwise. */
export function fieldError(
  field: string,
  constraint: string,
  message: string,
  params?: MessageParams,
): BusinessException {
  return new BusinessException(
    ErrorCode.VALIDATION_FAILED,
    new FieldErrorsText([{ field, constraint, message, params }]),
    {
      details: { fields: [{ field, message }] },
    },
  );
}

/** Membership: failures become code 10000 with each failing field named (`data.fields`: field, English message). */
export function envelopeValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    ...validationPipeOptions,
    exceptionFactory: (errors) => {
      const fields = flattenValidationErrors(errors);
      return new BusinessException(ErrorCode.VALIDATION_FAILED, new FieldErrorsText(fields, fields.omitted), {
        details: { fields: fields.map(({ field, message }) => ({ field, message })) },
      });
    },
  });
}

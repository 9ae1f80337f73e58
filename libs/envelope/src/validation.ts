import { ValidationError, ValidationPipe } from '@nestjs/common';
import { BusinessException } from './business.exception';
import { ErrorCode } from './error-code';
import { hasMessage, Locale, LocalizedText, MessageParams, SOURCE_LOCALE, translate } from './i18n';

export interface FieldError {
  field: string;
  message: string;
  /** class-validator constraint name (`isEmail`, `whitelistValidation`, a custom constraint's name). */
  constraint?: string;
  /** Parameters of the constraint's catalog text (`validation.<constraint>`). */
  params?: MessageParams;
}

export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = parent ? `${parent}.${e.property}` : e.property;
    for (const [constraint, msg] of Object.entries(e.constraints ?? {})) out.push({ field, message: msg, constraint });
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, field));
  }
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
  constructor(readonly fields: FieldError[]) {}

  render(locale: Locale): string {
    if (!this.fields.length) return translate(locale, 'code.10000');
    if (locale === SOURCE_LOCALE) return this.fields.map((f) => `${f.field}: ${f.message}`).join('; ');
    return this.fields
      .map((f) => {
        const key = `validation.${f.constraint ?? ''}`;
        const problem = translate(locale, hasMessage(key) ? key : 'validation.invalid', {
          field: f.field,
          ...f.params,
        });
        return translate(locale, 'validation.field', { field: f.field, message: problem });
      })
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
      return new BusinessException(ErrorCode.VALIDATION_FAILED, new FieldErrorsText(fields), {
        details: { fields: fields.map(({ field, message }) => ({ field, message })) },
      });
    },
  });
}

import { ValidationError, ValidationPipe } from '@nestjs/common';
import { BusinessException } from './business.exception';
import { ErrorCode } from './error-code';
import { OpenAiError } from './openai-error';

export interface FieldError {
  field: string;
  message: string;
}

export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = parent ? `${parent}.${e.property}` : e.property;
    for (const msg of Object.values(e.constraints ?? {})) out.push({ field, message: msg });
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, field));
  }
  return out;
}

const base = {
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  stopAtFirstError: false,
  validationError: { target: false, value: false },
} as const;

/** Membership: failures become code 10000 with each failing field named. */
export function envelopeValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    ...base,
    exceptionFactory: (errors) => {
      const fields = flattenValidationErrors(errors);
      const message = fields.map((f) => `${f.field}: ${f.message}`).join('; ') || 'Validation failed';
      return new BusinessException(ErrorCode.VALIDATION_FAILED, message, { details: { fields } });
    },
  });
}

/** Gateway: failures become 400 invalid_request_error with `param` naming the first field. */
export function openAiValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    ...base,
    exceptionFactory: (errors) => {
      const fields = flattenValidationErrors(errors);
      const first = fields[0];
      return new OpenAiError(400, fields.map((f) => `${f.field}: ${f.message}`).join('; ') || 'Invalid request', {
        type: 'invalid_request_error',
        code: 'invalid_value',
        param: first?.field ?? null,
      });
    },
  });
}

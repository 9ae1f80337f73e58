import { ValidationPipe } from '@nestjs/common';
import { flattenValidationErrors, SOURCE_LOCALE, translate, validationPipeOptions } from '@app/envelope';
import { GatewayError, GatewayErrorCode } from './gateway-errors';

/** Gateway: failures become 400 invalid_request_error with `param` naming the first field. */
export function openAiValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    ...validationPipeOptions,
    exceptionFactory: (errors) => {
      const fields = flattenValidationErrors(errors);
      const first = fields[0];
      return new GatewayError(GatewayErrorCode.InvalidValue, {
        message:
          [
            ...fields.map((f) => `${f.field}: ${f.message}`),
            ...(fields.omitted ? [translate(SOURCE_LOCALE, 'validation.more', { count: fields.omitted })] : []),
          ].join('; ') || 'Invalid request',
        param: first?.field ?? null,
      });
    },
  });
}

import { applyDecorators, SetMetadata, Type } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, getSchemaPath } from '@nestjs/swagger';
import { ErrorEnvelope } from './envelope';
import { RAW_RESPONSE } from './envelope.interceptor';

/** The route writes its own body (files, redirects); it is not wrapped in the envelope. */
export const RawResponse = () => SetMetadata(RAW_RESPONSE, true);

/** Documents a 200 answer as the envelope with `data` of the given type. */
export function ApiEnvelope(model?: Type<unknown> | null, options: { isArray?: boolean; description?: string } = {}) {
  const data = !model
    ? { nullable: true, example: null }
    : options.isArray
      ? { type: 'array', items: { $ref: getSchemaPath(model) } }
      : { $ref: getSchemaPath(model) };
  return applyDecorators(
    ApiExtraModels(...(model ? [model] : []), ErrorEnvelope),
    ApiOkResponse({
      description: options.description ?? 'Success envelope',
      schema: {
        type: 'object',
        required: ['code', 'message', 'data'],
        properties: {
          code: { type: 'integer', example: 200 },
          message: { type: 'string', example: 'success' },
          data: data as object,
        },
      },
    }),
  );
}

import { int, Schema, str } from './common';

const model: Schema = {
  type: 'object',
  required: ['id', 'object', 'created', 'owned_by'],
  properties: { id: str, object: { const: 'model' }, created: int, owned_by: str },
};

export const modelsSchemas: Record<string, Schema> = {
  'GET /v1/models': {
    type: 'object',
    required: ['object', 'data'],
    properties: { object: { const: 'list' }, data: { type: 'array', items: model } },
  },
  'GET /v1/models/{model}': model,
};

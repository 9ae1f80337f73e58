// Every served operation's answer schema, by `METHOD /path` (streamed events: `...#chunk` for chat and
// completions chunks, `...#event:<type>` for typed SSE events; audio answers other than json:
// `...#format:<response_format>`), plus the error body.
import { chatSchemas } from './chat';
import { errorBody, Schema } from './common';
import { completionsSchemas } from './completions';
import { embeddingsSchemas } from './embeddings';
import { mediaSchemas } from './media';
import { modelsSchemas } from './models';
import { responsesSchemas } from './responses';

export type { Schema } from './common';

export const OPERATION_SCHEMAS: Record<string, Schema> = {
  ...modelsSchemas,
  ...chatSchemas,
  ...completionsSchemas,
  ...embeddingsSchemas,
  ...responsesSchemas,
  ...(mediaSchemas as Record<string, Schema>),
};

export const ERROR_SCHEMA: Schema = errorBody;

// Every served operation's answer schema, by `METHOD /path` (streamed events: `...#chunk` for chat and
// completions chunks, `...#event:<type>` for typed SSE events), plus the error body.
//
// Hooks: the Responses schemas (`./responses`, POST /v1/responses and its events by type) and the media
// schemas (`./media`: images, transcriptions, speech) are written on their own branches; when merged,
// import them here and spread them into OPERATION_SCHEMAS:
//   import { responsesSchemas } from './responses';
//   import { mediaSchemas } from './media';
import { chatSchemas } from './chat';
import { errorBody, Schema } from './common';
import { completionsSchemas } from './completions';
import { embeddingsSchemas } from './embeddings';
import { modelsSchemas } from './models';

export type { Schema } from './common';

export const OPERATION_SCHEMAS: Record<string, Schema> = {
  ...modelsSchemas,
  ...chatSchemas,
  ...completionsSchemas,
  ...embeddingsSchemas,
};

export const ERROR_SCHEMA: Schema = errorBody;

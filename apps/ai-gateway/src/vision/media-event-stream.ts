import type { GatewayError } from '../errors';

export type MediaStreamStatus = 'ok' | 'failed' | 'aborted';

/**
 * What a streaming media use case returns (a transcription, an image generation or edit, speech as
 * events): its events as they come, and its settlement. The transport (media-stream.ts) calls `settle`
 * exactly once when the events end: `ok`, `failed` (with the catalog error) or `aborted` (the client
 * went away); what is billed for each is the use case's to say.
 */
export interface MediaEventStream {
  events: AsyncIterable<Record<string, unknown>>;
  settle(status: MediaStreamStatus, error?: GatewayError | Error): Promise<void>;
}

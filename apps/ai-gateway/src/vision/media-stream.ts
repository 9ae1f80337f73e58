import { openAiErrorBody } from '../errors';
import { CallAbortedError } from '@app/llm';
import type { SseResponse } from '../http/sse-response';
import type { MediaEventStream, MediaStreamStatus } from './media-event-stream';
import { toMediaError } from './media-errors';

/**
 * Relays a media use case's events (transcript.text.*, speech.audio.*, image_generation.*, image_edit.*)
 * as server-sent events and settles the call through the stream's `settle` before the last event is
 * written, as relay-stream.ts does for chat: a client that has read the whole stream sees its budget
 * charged. The last event is held back until then (each other event is written as soon as the next one
 * arrives). A failure after the start ends the stream with the held event and an `error` event (the
 * OpenAI error body); a client that left settles as `aborted`.
 */
export async function relayMediaEvents(sse: SseResponse, stream: MediaEventStream): Promise<void> {
  sse.open({});
  let held: Record<string, unknown> | undefined;
  let status: MediaStreamStatus = 'ok';
  let failure: unknown;
  try {
    for await (const event of stream.events) {
      if (held) await sse.data(held);
      if (sse.closed) throw new CallAbortedError();
      held = event;
    }
  } catch (e) {
    if (e instanceof CallAbortedError || sse.closed) status = 'aborted';
    else {
      status = 'failed';
      failure = toMediaError(e, 'stream');
    }
  }
  try {
    await stream.settle(status, failure as Error | undefined);
    // A failed stream still delivers the event it held (a completed image is charged, so it is sent).
    if (status !== 'aborted' && held) await sse.data(held);
    if (status === 'failed') await sse.data(openAiErrorBody(failure).body);
  } finally {
    sse.end();
  }
}

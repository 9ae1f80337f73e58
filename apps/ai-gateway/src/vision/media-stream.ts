import { GatewayError, openAiErrorBody } from '@app/envelope';
import { CallAbortedError } from '@app/llm';
import type { Response } from 'express';
import { SseResponse } from '../http/sse-response';
import { toMediaError } from './media-errors';

export type MediaStreamStatus = 'ok' | 'failed' | 'aborted';

/**
 * Relays a media operation's events (transcript.text.*, speech.audio.*, image_generation.*, image_edit.*)
 * as server-sent events and settles the call through `settle` before the last event is written, as
 * relay-stream.ts does for chat: a client that has read the whole stream sees its budget charged. The
 * last event is held back until then (each other event is written as soon as the next one arrives).
 * `seen` is told of every event (what is billed is counted from them). A failure after the start ends
 * the stream with the held event and an `error` event (the OpenAI error body); a client that left
 * settles as `aborted`.
 */
export async function relayMediaEvents(
  res: Response,
  stallMs: number,
  events: AsyncIterable<Record<string, unknown>>,
  settle: (status: MediaStreamStatus, error?: GatewayError | Error) => Promise<void>,
  seen: (event: Record<string, unknown>) => void = () => undefined,
): Promise<void> {
  const sse = new SseResponse(res, stallMs);
  sse.open({});
  let held: Record<string, unknown> | undefined;
  let status: MediaStreamStatus = 'ok';
  let failure: unknown;
  try {
    for await (const event of events) {
      seen(event);
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
    await settle(status, failure as Error | undefined);
    // A failed stream still delivers the event it held (a completed image is charged, so it is sent).
    if (status !== 'aborted' && held) await sse.data(held);
    if (status === 'failed') await sse.data(openAiErrorBody(failure).body);
  } finally {
    sse.end();
  }
}

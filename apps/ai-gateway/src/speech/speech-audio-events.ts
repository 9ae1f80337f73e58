import type { SpeechStream } from '@app/engines';
import type { MediaEventStream } from '../vision/media-event-stream';

/**
 * `/v1/audio/speech` with `stream_format: "sse"`: one speech.audio.delta (base64) per chunk the engine
 * makes (a segment of the text; one for short texts) and speech.audio.done. The chunks settle the call
 * themselves (SynthesizeSpeechService.stream), so the stream has nothing left to bill. Usage in tokens is
 * 0 (the engine counts none).
 */
export function speechAudioEvents(speech: Pick<SpeechStream, 'chunks'>): MediaEventStream {
  const events = (async function* () {
    for await (const chunk of speech.chunks) yield { type: 'speech.audio.delta', audio: chunk.toString('base64') };
    yield { type: 'speech.audio.done', usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } };
  })();
  return { events, settle: async () => undefined };
}

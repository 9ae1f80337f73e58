import type { SynthesizedSpeech } from '@app/engines';
import type { MediaEventStream } from '../vision/media-event-stream';

/**
 * `/v1/audio/speech` with `stream_format: "sse"`: the local engine synthesizes the whole text, so the
 * audio goes as one speech.audio.delta (base64) and speech.audio.done. Already settled by
 * SynthesizeSpeechService.synthesize: the stream has nothing left to bill. Usage in tokens is 0 (the
 * engine counts none).
 */
export function speechAudioEvents(speech: SynthesizedSpeech): MediaEventStream {
  const events = (async function* () {
    yield { type: 'speech.audio.delta', audio: speech.audio.toString('base64') };
    yield { type: 'speech.audio.done', usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } };
  })();
  return { events, settle: async () => undefined };
}

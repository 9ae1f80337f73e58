import { collectSpeech, SpeechStream } from '@app/engines';
import type { Response } from 'express';
import { drainedOrCut } from '@app/platform';

/**
 * Writes a synthesis answer. Audio that comes as one chunk (SpeechStream.single) is sent with its
 * Content-Length and X-Audio-Duration. A longer text is sent chunked as each segment is spoken, so its
 * first audio plays while the rest is made; its duration is not known when the headers go. A client that
 * takes none of it for `stallMs` (REQUEST_TIMEOUT_MS) while a chunk waits is cut, which stops the engine
 * within a segment and settles the call as aborted; so is an answer whose engine fails midway (the
 * status was sent: a cut connection is the only way left to say the audio is incomplete).
 */
export async function sendSpeech(res: Response, speech: SpeechStream, stallMs: number): Promise<void> {
  res.status(200).setHeader('Content-Type', speech.contentType);
  if (speech.single) {
    const whole = await collectSpeech(speech);
    res.setHeader('Content-Length', String(whole.audio.length));
    res.setHeader('X-Audio-Duration', whole.duration.toFixed(3));
    res.end(whole.audio);
    return;
  }
  res.flushHeaders();
  try {
    for await (const chunk of speech.chunks) {
      if (res.destroyed) break;
      if (!res.write(chunk)) await drainedOrCut(res, stallMs);
    }
    res.end();
  } catch {
    res.destroy();
  }
}

import { speechAudioEvents } from './speech-audio-events';

describe('speechAudioEvents (/v1/audio/speech, stream_format sse)', () => {
  it('carries each chunk of audio as a base64 delta, then a done event with zero token usage; nothing left to bill', async () => {
    const parts = [Buffer.from('RIFF-audio-bytes'), Buffer.from('more-samples')];
    const stream = speechAudioEvents({
      chunks: (async function* () {
        yield* parts;
      })(),
    });
    const events: unknown[] = [];
    for await (const e of stream.events) events.push(e);
    expect(events).toEqual([
      { type: 'speech.audio.delta', audio: parts[0].toString('base64') },
      { type: 'speech.audio.delta', audio: parts[1].toString('base64') },
      { type: 'speech.audio.done', usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } },
    ]);
    await expect(stream.settle('aborted')).resolves.toBeUndefined();
  });
});

import { speechAudioEvents } from './speech-audio-events';

describe('speechAudioEvents (/v1/audio/speech, stream_format sse)', () => {
  it('carries the synthesized audio as one base64 delta and a done event with zero token usage; nothing left to bill', async () => {
    const audio = Buffer.from('RIFF-audio-bytes');
    const stream = speechAudioEvents({
      audio,
      contentType: 'audio/wav',
      format: 'wav',
      sampleRate: 22_050,
      duration: 0.5,
    });
    const events: unknown[] = [];
    for await (const e of stream.events) events.push(e);
    expect(events).toEqual([
      { type: 'speech.audio.delta', audio: audio.toString('base64') },
      { type: 'speech.audio.done', usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } },
    ]);
    await expect(stream.settle('aborted')).resolves.toBeUndefined();
  });
});

import { GatewayError } from '../errors';
import { chunkingFields, extraTranscriptionFields, refuseForLocalEngine } from './transcription-fields';

describe('transcription fields', () => {
  it("passes chunking_strategy in the form OpenAI's SDK sends, from an object, a JSON text or auto", () => {
    expect(chunkingFields('auto')).toEqual([['chunking_strategy', 'auto']]);
    expect(chunkingFields({ type: 'server_vad', silence_duration_ms: '300' })).toEqual([
      ['chunking_strategy[type]', 'server_vad'],
      ['chunking_strategy[silence_duration_ms]', '300'],
    ]);
    expect(chunkingFields('{"type":"server_vad","threshold":0.4}')).toEqual([
      ['chunking_strategy[type]', 'server_vad'],
      ['chunking_strategy[threshold]', '0.4'],
    ]);
    for (const bad of [
      'manual',
      { type: 'other' },
      { type: 'server_vad', extra: 1 },
      { type: 'server_vad', threshold: 'x' },
      '{nope',
    ]) {
      expect(() => chunkingFields(bad)).toThrow(GatewayError);
    }
  });

  it('repeats the array fields with [] names', () => {
    expect(extraTranscriptionFields({ known_speaker_names: ['a', 'b'], include: ['logprobs'] })).toEqual([
      ['known_speaker_names[]', 'a'],
      ['known_speaker_names[]', 'b'],
      ['include[]', 'logprobs'],
    ]);
  });

  it('refuses what the local engine cannot make, naming the field', () => {
    const param = (body: object) => {
      try {
        refuseForLocalEngine(body);
        return 'accepted';
      } catch (e) {
        return (e as GatewayError).param;
      }
    };
    expect(param({ response_format: 'diarized_json' })).toBe('response_format');
    expect(param({ known_speaker_references: ['data:audio/wav;base64,AA'] })).toBe('known_speaker_references');
    expect(param({ include: ['logprobs'] })).toBe('include');
    expect(param({ timestamp_granularities: ['word'] })).toBe('timestamp_granularities');
    expect(param({ stream: true, response_format: 'srt' })).toBe('response_format');
    expect(param({ stream: true, chunking_strategy: 'auto' })).toBe('accepted');
  });
});

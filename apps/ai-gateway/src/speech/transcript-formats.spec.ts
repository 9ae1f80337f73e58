import { subtitleTime, toSrt, toVerboseSegments, toVtt } from './transcript-formats';

describe('transcript formats (srt, vtt)', () => {
  const segments = [
    { text: 'hello world', start: 0.16, end: 1.5 },
    { text: 'second\n\nline', start: 61.0004, end: 3725.25 },
  ];

  it('writes subtitle times with the format separator', () => {
    expect(subtitleTime(0, ',')).toBe('00:00:00,000');
    expect(subtitleTime(3725.25, '.')).toBe('01:02:05.250');
  });

  it('makes SRT cues numbered from 1 and WebVTT with its header; text stays on one line', () => {
    expect(toSrt(segments)).toBe(
      '1\n00:00:00,160 --> 00:00:01,500\nhello world\n\n2\n00:01:01,000 --> 01:02:05,250\nsecond line\n',
    );
    expect(toVtt(segments)).toBe(
      'WEBVTT\n\n00:00:00.160 --> 00:00:01.500\nhello world\n\n00:01:01.000 --> 01:02:05.250\nsecond line\n',
    );
  });

  it("makes verbose_json segments with every field OpenAI's reference requires", () => {
    expect(toVerboseSegments(segments)).toEqual([
      {
        id: 0,
        seek: 16,
        start: 0.16,
        end: 1.5,
        text: 'hello world',
        tokens: [],
        temperature: 0,
        avg_logprob: 0,
        compression_ratio: 1,
        no_speech_prob: 0,
      },
      {
        id: 1,
        seek: 6100,
        start: 61.0004,
        end: 3725.25,
        text: 'second\n\nline',
        tokens: [],
        temperature: 0,
        avg_logprob: 0,
        compression_ratio: 1,
        no_speech_prob: 0,
      },
    ]);
  });
});

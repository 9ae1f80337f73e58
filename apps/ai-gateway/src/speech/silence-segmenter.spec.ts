import { SilenceSegmenter } from './silence-segmenter';

const RATE = 16_000;
const tone = (seconds: number) =>
  Int16Array.from({ length: Math.round(seconds * RATE) }, (_, i) =>
    Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / RATE)),
  );
const silence = (seconds: number) => new Int16Array(Math.round(seconds * RATE));

function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

describe('SilenceSegmenter', () => {
  it('cuts speech on silence whatever the chunk sizes', () => {
    const audio = concat(silence(0.5), tone(1), silence(1), tone(0.5), silence(0.2));
    const seg = new SilenceSegmenter({ sampleRate: RATE });
    const found = [];
    for (let at = 0, size = 1; at < audio.length; at += size, size = (size * 7 + 333) % 5000)
      found.push(...seg.push(audio.subarray(at, at + size)));
    const last = seg.flush();
    if (last) found.push(last);
    expect(found).toHaveLength(2);
    expect(found[0].start).toBeGreaterThanOrEqual(0.25);
    expect(found[0].start).toBeLessThanOrEqual(0.5);
    expect(Math.abs(found[0].end - 1.5)).toBeLessThan(0.1);
    expect(Math.abs(found[1].start - 2.3)).toBeLessThan(0.25);
    expect(Math.abs(found[1].end - 3.0)).toBeLessThan(0.1);
    expect(found[1].pcm.length / RATE).toBeCloseTo(found[1].end - found[1].start, 2);
    expect(seg.position).toBeCloseTo(3.2, 2);
  });

  it('windows a long utterance and reports the open segment', () => {
    const seg = new SilenceSegmenter({ sampleRate: RATE, maxSegmentMs: 5000 });
    const found = seg.push(tone(12));
    expect(found.map((s) => Math.round(s.end - s.start))).toEqual([5, 5]);
    expect(seg.inSpeech).toBe(true);
    expect(Math.round(seg.openSegment()!.end - seg.openSegment()!.start)).toBe(2);
    expect(seg.flush()).not.toBeNull();
    expect(seg.flush()).toBeNull();
  });

  it('finds nothing in silence', () => {
    const seg = new SilenceSegmenter({ sampleRate: RATE });
    expect(seg.push(silence(3))).toEqual([]);
    expect(seg.flush()).toBeNull();
  });
});

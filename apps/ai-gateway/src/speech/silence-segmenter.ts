/** A stretch of speech cut from a live stream, with its place in the stream in seconds. */
export interface SpeechSegment {
  pcm: Int16Array;
  start: number;
  end: number;
}

export interface SegmenterOptions {
  sampleRate: number;
  /** Frame RMS above this counts as speech (16-bit scale). */
  threshold?: number;
  /** Silence that ends a segment. */
  minSilenceMs?: number;
  /** Longest segment; a long utterance is cut into windows of this length. */
  maxSegmentMs?: number;
  /** Audio kept before the first loud frame so word onsets are not clipped. */
  preRollMs?: number;
}

const FRAME_MS = 30;

/**
 * Cuts mono 16-bit PCM into speech segments on silence (frame energy), or into windows when nobody
 * pauses. Pure and synchronous: feed chunks of any size, collect finished segments.
 */
export class SilenceSegmenter {
  private readonly frame: number;
  private readonly threshold: number;
  private readonly silenceFrames: number;
  private readonly maxFrames: number;
  private readonly preRollFrames: number;
  private pending = new Int16Array(0);
  private framesSeen = 0;
  private samplesSeen = 0;
  private current: Int16Array[] = [];
  private currentStartFrame = 0;
  private silentRun = 0;
  private preRoll: Int16Array[] = [];

  constructor(private readonly opts: SegmenterOptions) {
    this.frame = Math.round((opts.sampleRate * FRAME_MS) / 1000);
    this.threshold = opts.threshold ?? 500;
    this.silenceFrames = Math.ceil((opts.minSilenceMs ?? 600) / FRAME_MS);
    this.maxFrames = Math.ceil((opts.maxSegmentMs ?? 15_000) / FRAME_MS);
    this.preRollFrames = Math.ceil((opts.preRollMs ?? 200) / FRAME_MS);
  }

  /** Seconds of audio fed so far. */
  get position(): number {
    return this.samplesSeen / this.opts.sampleRate;
  }

  /** Whether speech is being collected right now. */
  get inSpeech(): boolean {
    return this.current.length > 0;
  }

  /** The speech collected so far in the open segment (for partial results), or null. */
  openSegment(): SpeechSegment | null {
    if (!this.current.length) return null;
    return this.build(this.current, this.currentStartFrame);
  }

  push(chunk: Int16Array): SpeechSegment[] {
    this.samplesSeen += chunk.length;
    const joined = new Int16Array(this.pending.length + chunk.length);
    joined.set(this.pending, 0);
    joined.set(chunk, this.pending.length);
    const done: SpeechSegment[] = [];
    let offset = 0;
    for (; offset + this.frame <= joined.length; offset += this.frame) {
      const frame = joined.slice(offset, offset + this.frame);
      const segment = this.feedFrame(frame);
      if (segment) done.push(segment);
    }
    this.pending = joined.slice(offset);
    return done;
  }

  /** Ends the stream: the open segment (with any partial frame) is returned. */
  flush(): SpeechSegment | null {
    if (this.pending.length && this.current.length) this.current.push(this.pending);
    this.pending = new Int16Array(0);
    if (!this.current.length) return null;
    return this.close();
  }

  private feedFrame(frame: Int16Array): SpeechSegment | null {
    const index = this.framesSeen++;
    const loud = rms(frame) >= this.threshold;
    if (!this.current.length) {
      if (!loud) {
        this.preRoll.push(frame);
        if (this.preRoll.length > this.preRollFrames) this.preRoll.shift();
        return null;
      }
      this.current = [...this.preRoll, frame];
      this.currentStartFrame = index - this.preRoll.length;
      this.preRoll = [];
      this.silentRun = 0;
      return null;
    }
    this.current.push(frame);
    this.silentRun = loud ? 0 : this.silentRun + 1;
    if (this.silentRun >= this.silenceFrames || this.current.length >= this.maxFrames) return this.close();
    return null;
  }

  private close(): SpeechSegment {
    // Trailing silence is not part of the utterance.
    const frames = this.current.slice(0, this.current.length - Math.max(0, this.silentRun - 1));
    const segment = this.build(frames, this.currentStartFrame);
    this.current = [];
    this.silentRun = 0;
    return segment;
  }

  private build(frames: Int16Array[], startFrame: number): SpeechSegment {
    const total = frames.reduce((n, f) => n + f.length, 0);
    const pcm = new Int16Array(total);
    let at = 0;
    for (const f of frames) {
      pcm.set(f, at);
      at += f.length;
    }
    const start = (startFrame * this.frame) / this.opts.sampleRate;
    return { pcm, start: round(start), end: round(start + total / this.opts.sampleRate) };
  }
}

function rms(frame: Int16Array): number {
  let sum = 0;
  for (let i = 0; i < frame.length; i++) sum += frame[i] * frame[i];
  return Math.sqrt(sum / frame.length);
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

import * as path from 'path';
import { encodeWav, encodeWithFfmpeg, resamplePcm, wavHeader } from '../audio/audio-codec';
import { EngineCallOptions, EngineLimiter } from '../engine-limiter';
import { EngineInputError, EngineUnavailableError, EngineWorker } from '../engine-worker';

/** The contract's voice ids and the eSpeak NG voice (+ variant) that speaks each. */
export const VOICES: Record<string, { espeak: string; language: string; gender: 'female' | 'male' }> = {
  'zh-CN-XiaoxiaoNeural': { espeak: 'cmn+f3', language: 'zh-CN', gender: 'female' },
  'zh-CN-YunxiNeural': { espeak: 'cmn', language: 'zh-CN', gender: 'male' },
  'zh-CN-XiaoyiNeural': { espeak: 'cmn+f4', language: 'zh-CN', gender: 'female' },
  'en-US-JennyNeural': { espeak: 'en-us+f3', language: 'en-US', gender: 'female' },
  'en-US-GuyNeural': { espeak: 'en-us', language: 'en-US', gender: 'male' },
};
export const DEFAULT_VOICE = 'zh-CN-XiaoxiaoNeural';
/** The contract's formats (mp3, wav, ogg) plus the extra ones of the OpenAI `/audio/speech` alias. */
export const SPEECH_FORMATS = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  opus: 'audio/ogg; codecs=opus',
  flac: 'audio/flac',
  aac: 'audio/aac',
  pcm: 'audio/pcm',
} as const;
export type SpeechFormat = keyof typeof SPEECH_FORMATS;

export interface SynthesizedSpeech {
  audio: Buffer;
  contentType: string;
  format: SpeechFormat;
  sampleRate: number;
  /** Seconds of speech produced. */
  duration: number;
}

/** An answer being made: its audio piece by piece, and how much of the text it has spoken so far. */
export interface SpeechStream {
  readonly contentType: string;
  readonly format: SpeechFormat;
  /** The pieces the text is spoken in (speechSegments). */
  readonly segments: number;
  /** The audio comes as one chunk (one segment, or a format ffmpeg encodes from the whole): its length is known when it comes. */
  readonly single: boolean;
  /**
   * The audio, one chunk per segment spoken (mp3, wav, pcm) or one at the end (ogg, opus, flac, aac,
   * encoded by ffmpeg from the whole). A wav of several segments starts with a header whose sizes are
   * 0xFFFFFFFF (unknown). Iterate once; stopping early, or an aborted signal, stops the work within a
   * segment.
   */
  readonly chunks: AsyncIterable<Buffer>;
  /** Code points of the segments spoken so far and the seconds of speech they made. */
  readonly spoken: { characters: number; seconds: number; sampleRate: number };
}

const ESPEAK_DEFAULT_WPM = 175;

/** Code points per worker call: long texts are spoken in pieces of at most this, taking turns with other callers. */
export const SEGMENT_CHARS = 160;
/** Where a segment may end, best first: after a sentence, then after a clause or a space. */
const SENTENCE_END = new Set(['。', '！', '？', '!', '?', ';', '；', '…', '\n']);
const CLAUSE_END = new Set(['，', ',', '、', '：', ':', ' ', '\t', '\r']);

/**
 * Cuts a text into pieces of at most `max` code points, each ending after the last sentence end (a
 * '.' only before white space, so "3.14" stays whole) in its last three quarters, else after the last
 * clause end or space there, else at `max`. Linear in the text; pieces of white space alone are dropped.
 */
export function speechSegments(text: string, max = SEGMENT_CHARS): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  let start = 0;
  while (chars.length - start > max) {
    let sentence = -1;
    let clause = -1;
    for (let i = start + Math.floor(max / 4); i < start + max; i++) {
      const c = chars[i];
      if (SENTENCE_END.has(c) || (c === '.' && /\s/.test(chars[i + 1] ?? ''))) sentence = i + 1;
      else if (CLAUSE_END.has(c)) clause = i + 1;
    }
    const end = sentence > 0 ? sentence : clause > 0 ? clause : start + max;
    out.push(chars.slice(start, end).join(''));
    start = end;
  }
  out.push(chars.slice(start).join(''));
  return out.filter((piece) => piece.trim() !== '');
}

const BODY = `
async function init(data) {
  const { default: createEspeak } = await importFile(data.espeak);
  const lame = await importFile(data.lame);
  const espeak = await createEspeak();
  const worker = new espeak.eSpeakNGWorker();
  const sampleRate = worker.get_samplerate();
  // One MP3 encoder per answer being made, so its segments join without gaps; freed by its last segment or
  // endJob, and at most as many as the engine limiter lets be under way (openWork).
  const encoders = new Map();
  return {
    async synthesize(text, voice, wpm, mp3Job, first, last) {
      if (worker.set_voice(voice) !== 0) throw new InputError('voice not available: ' + voice);
      worker.set_rate(wpm);
      const chunks = [];
      let total = 0;
      worker.synthesize(text, (samples) => { chunks.push(samples); total += samples.length; return false; });
      const pcm = new Int16Array(total);
      let offset = 0;
      for (const c of chunks) { pcm.set(c, offset); offset += c.length; }
      if (mp3Job === null) return transfer({ sampleRate, samples: total, pcm }, [pcm.buffer]);
      let encoder = encoders.get(mp3Job);
      if (!encoder) {
        // An answer's later segment without its encoder (a worker restarted under it) fails: a fresh one would skip audio.
        if (!first) throw new Error('the MP3 encoder of this answer is gone');
        encoder = new lame.Mp3Encoder(1, sampleRate, 64);
        encoders.set(mp3Job, encoder);
      }
      const parts = [];
      for (let i = 0; i < pcm.length; i += 1152 * 20) parts.push(encoder.encodeBuffer(pcm.subarray(i, i + 1152 * 20)));
      if (last) {
        parts.push(encoder.flush());
        encoders.delete(mp3Job);
      }
      const bytes = Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
      const out = new Uint8Array(bytes);
      return transfer({ sampleRate, samples: total, mp3: out }, [out.buffer]);
    },
    async endJob(mp3Job) {
      encoders.delete(mp3Job);
      return null;
    },
  };
}
`;

/**
 * Text-to-speech with eSpeak NG compiled to WASM (`@echogarden/espeak-ng-emscripten`, GPL-3.0, an
 * optional dependency): Mandarin (`cmn`) and American English (`en-us`). MP3 via lamejs in the same worker.
 */
export class SpeechSynthesisEngine {
  private static instance: SpeechSynthesisEngine | null = null;
  private readonly worker: EngineWorker | null;
  private readonly missing: string | null = null;
  private nextJob = 1;

  constructor(espeakPackage = '@echogarden/espeak-ng-emscripten') {
    let espeak: string | null = null;
    try {
      espeak = require.resolve(espeakPackage);
    } catch {
      this.missing = `optional package ${espeakPackage} is not installed`;
    }
    const lame = path.join(path.dirname(require.resolve('@breezystack/lamejs')), 'lamejs.js');
    this.worker = espeak ? new EngineWorker('tts', BODY, { espeak, lame }) : null;
  }

  /** One engine per process. */
  static shared(): SpeechSynthesisEngine {
    return (SpeechSynthesisEngine.instance ??= new SpeechSynthesisEngine());
  }

  /** False when the optional eSpeak NG package is not installed. */
  get installed(): boolean {
    return this.worker !== null;
  }

  get loaded(): boolean {
    return this.worker?.started ?? false;
  }

  /** The whole audio at once (tests, the SSE alias): `stream` collected. */
  async synthesize(
    text: string,
    opts: { voice?: string; speed?: number; format?: SpeechFormat } & EngineCallOptions = {},
  ): Promise<SynthesizedSpeech> {
    return collectSpeech(this.stream(text, opts));
  }

  /**
   * Speaks `text` segment by segment (speechSegments): each segment is one worker call under the shared
   * engine limiter, so callers take turns on the one eSpeak thread a segment at a time, and a caller that
   * leaves (signal) stops the work within a segment. The answer is opened like any engine work of several
   * steps (EngineLimiter.openWork: refused when the key or the process has as many under way as they may
   * run and wait) and its first segment admitted like any engine work; the others continue it. Input errors
   * (voice, speed, format, empty text) are thrown here, before any work.
   */
  stream(
    text: string,
    opts: { voice?: string; speed?: number; format?: SpeechFormat } & EngineCallOptions = {},
  ): SpeechStream {
    if (!this.worker) throw new EngineUnavailableError('tts', this.missing ?? 'not installed');
    const worker = this.worker;
    const voiceId = opts.voice ?? DEFAULT_VOICE;
    // Own entries only: a voice or format named `constructor`, `toString`... is unknown, not Object's member.
    const voice = Object.hasOwn(VOICES, voiceId) ? VOICES[voiceId] : undefined;
    if (!voice) throw new EngineInputError(`unknown voice ${voiceId}`);
    const speed = opts.speed ?? 1;
    if (!(speed >= 0.5 && speed <= 2)) throw new EngineInputError('speed must be between 0.5 and 2.0');
    const format = opts.format ?? 'mp3';
    if (!Object.hasOwn(SPEECH_FORMATS, format)) throw new EngineInputError(`unsupported format ${format}`);
    if (text.trim() === '') throw new EngineInputError('text is empty');

    const segments = speechSegments(text);
    const wpm = Math.round(ESPEAK_DEFAULT_WPM * speed);
    const mp3Job = format === 'mp3' ? this.nextJob++ : null;
    const spoken = { characters: 0, seconds: 0, sampleRate: 0 };
    type Spoken = { sampleRate: number; samples: number; pcm?: Int16Array; mp3?: Uint8Array };
    const step = (i: number) =>
      worker.call<Spoken>(
        'synthesize',
        [segments[i], voice.espeak, wpm, mp3Job, i === 0, i === segments.length - 1],
        [],
        {
          key: opts.key,
          signal: opts.signal,
          continued: i > 0,
        },
      );
    // The engine makes the answer at its own pace, not the reader's: a reader that reads slowly holds the
    // chunks made (as much as a whole answer), not the engine work opened for it.
    async function produce(push: (chunk: Buffer) => void, stopped: () => boolean): Promise<void> {
      const whole: Int16Array[] = [];
      let finished = false;
      // Bounds the answers being made per key and per process, and so their encoders and continued segments.
      const close = EngineLimiter.shared().openWork(opts.key);
      try {
        for (let i = 0; i < segments.length && !stopped(); i++) {
          const out = await step(i);
          spoken.characters += Array.from(segments[i]).length;
          spoken.seconds += out.samples / out.sampleRate;
          spoken.sampleRate = out.sampleRate;
          if (out.mp3) push(Buffer.from(out.mp3.buffer, out.mp3.byteOffset, out.mp3.byteLength));
          else if (format === 'pcm') {
            // OpenAI's raw format: 24 kHz, signed 16-bit little-endian, mono.
            const pcm = resamplePcm(out.pcm!, out.sampleRate, 24_000);
            push(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
          } else if (format === 'wav' && segments.length === 1) push(encodeWav(out.pcm!, out.sampleRate));
          else if (format === 'wav') {
            if (i === 0) push(wavHeader(out.sampleRate));
            push(Buffer.from(out.pcm!.buffer, out.pcm!.byteOffset, out.pcm!.byteLength));
          } else whole.push(out.pcm!);
        }
        if (whole.length > 0 && !stopped()) {
          const pcm = whole.length === 1 ? whole[0] : concatPcm(whole);
          push(
            await encodeWithFfmpeg(pcm, spoken.sampleRate, format as 'ogg' | 'opus' | 'flac' | 'aac', {
              key: opts.key,
              signal: opts.signal,
              continued: true,
            }),
          );
        }
        finished = !stopped();
      } finally {
        close();
        // An answer left unfinished frees its MP3 encoder in the worker (if a segment made one).
        if (mp3Job !== null && !finished) worker.post('endJob', [mp3Job]);
      }
    }
    async function* chunks(): AsyncGenerator<Buffer> {
      const made: Buffer[] = [];
      let done = false;
      let stop = false;
      let failure: Error | undefined;
      let wake: (() => void) | null = null;
      const signal = () => {
        wake?.();
        wake = null;
      };
      const producing = produce(
        (chunk) => {
          made.push(chunk);
          signal();
        },
        () => stop,
      ).then(
        () => {
          done = true;
          signal();
        },
        (e: unknown) => {
          failure = e instanceof Error ? e : new Error(String(e));
          done = true;
          signal();
        },
      );
      try {
        for (;;) {
          if (made.length > 0) yield made.shift()!;
          else if (done) {
            if (failure !== undefined) throw failure;
            return;
          } else await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        // A reader that stopped early stops the making within a segment; the work is closed before this ends.
        stop = true;
        await producing;
      }
    }
    const single = segments.length === 1 || !['mp3', 'wav', 'pcm'].includes(format);
    return { contentType: SPEECH_FORMATS[format], format, segments: segments.length, single, chunks: chunks(), spoken };
  }

  close(): Promise<void> {
    return this.worker?.close() ?? Promise.resolve();
  }
}

/** All of a speech stream's audio in one Buffer, a wav's header sizes filled in. */
export async function collectSpeech(speech: SpeechStream): Promise<SynthesizedSpeech> {
  const parts: Buffer[] = [];
  for await (const chunk of speech.chunks) parts.push(chunk);
  const audio = parts.length === 1 ? parts[0] : Buffer.concat(parts);
  if (speech.format === 'wav') audio.set(wavHeader(speech.spoken.sampleRate, audio.length - 44));
  const { seconds: duration, sampleRate } = speech.spoken;
  return { audio, contentType: speech.contentType, format: speech.format, sampleRate, duration };
}

function concatPcm(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

import * as path from 'path';
import { encodeWav, encodeWithFfmpeg, resamplePcm } from '../audio/audio-codec';
import type { EngineCallOptions } from '../engine-limiter';
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

const ESPEAK_DEFAULT_WPM = 175;

const BODY = `
async function init(data) {
  const { default: createEspeak } = await importFile(data.espeak);
  const lame = await importFile(data.lame);
  const espeak = await createEspeak();
  const worker = new espeak.eSpeakNGWorker();
  const sampleRate = worker.get_samplerate();
  return {
    async synthesize(text, voice, wpm, mp3) {
      if (worker.set_voice(voice) !== 0) throw new InputError('voice not available: ' + voice);
      worker.set_rate(wpm);
      const chunks = [];
      let total = 0;
      worker.synthesize(text, (samples) => { chunks.push(samples); total += samples.length; return false; });
      const pcm = new Int16Array(total);
      let offset = 0;
      for (const c of chunks) { pcm.set(c, offset); offset += c.length; }
      if (!mp3) return transfer({ sampleRate, samples: total, pcm }, [pcm.buffer]);
      const encoder = new lame.Mp3Encoder(1, sampleRate, 64);
      const parts = [];
      for (let i = 0; i < pcm.length; i += 1152 * 20) parts.push(encoder.encodeBuffer(pcm.subarray(i, i + 1152 * 20)));
      parts.push(encoder.flush());
      const bytes = Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
      const out = new Uint8Array(bytes);
      return transfer({ sampleRate, samples: total, mp3: out }, [out.buffer]);
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

  /** The synthesis (worker call) and any ffmpeg encode each take a slot of the shared engine limiter, one after the other. */
  async synthesize(
    text: string,
    opts: { voice?: string; speed?: number; format?: SpeechFormat } & EngineCallOptions = {},
  ): Promise<SynthesizedSpeech> {
    if (!this.worker) throw new EngineUnavailableError('tts', this.missing ?? 'not installed');
    const voiceId = opts.voice ?? DEFAULT_VOICE;
    // Own entries only: a voice or format named `constructor`, `toString`... is unknown, not Object's member.
    const voice = Object.hasOwn(VOICES, voiceId) ? VOICES[voiceId] : undefined;
    if (!voice) throw new EngineInputError(`unknown voice ${voiceId}`);
    const speed = opts.speed ?? 1;
    if (!(speed >= 0.5 && speed <= 2)) throw new EngineInputError('speed must be between 0.5 and 2.0');
    const format = opts.format ?? 'mp3';
    if (!Object.hasOwn(SPEECH_FORMATS, format)) throw new EngineInputError(`unsupported format ${format}`);
    if (text.trim() === '') throw new EngineInputError('text is empty');

    const call = { key: opts.key, signal: opts.signal };
    const out = await this.worker.call<{ sampleRate: number; samples: number; pcm?: Int16Array; mp3?: Uint8Array }>(
      'synthesize',
      [text, voice.espeak, Math.round(ESPEAK_DEFAULT_WPM * speed), format === 'mp3'],
      [],
      call,
    );
    const duration = out.samples / out.sampleRate;
    let audio: Buffer;
    if (out.mp3) audio = Buffer.from(out.mp3.buffer, out.mp3.byteOffset, out.mp3.byteLength);
    else if (format === 'wav') audio = encodeWav(out.pcm!, out.sampleRate);
    else if (format === 'pcm') {
      // OpenAI's raw format: 24 kHz, signed 16-bit little-endian, mono.
      const pcm = resamplePcm(out.pcm!, out.sampleRate, 24_000);
      audio = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    } else audio = await encodeWithFfmpeg(out.pcm!, out.sampleRate, format as 'ogg' | 'opus' | 'flac' | 'aac', call);
    return { audio, contentType: SPEECH_FORMATS[format], format, sampleRate: out.sampleRate, duration };
  }

  close(): Promise<void> {
    return this.worker?.close() ?? Promise.resolve();
  }
}

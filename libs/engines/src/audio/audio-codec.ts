import { accessSync, chmodSync, constants, promises as fs } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import type { EngineCallOptions } from '../engine-limiter';
import { runEngineProcess } from '../engine-process';
import { EngineInputError, EngineUnavailableError } from '../engine-worker';

/** Containers accepted for transcription, keyed by ffmpeg's demuxer name. */
const CONTAINERS: Record<string, string> = {
  mp3: 'mp3',
  wav: 'wav',
  'mov,mp4,m4a,3gp,3g2,mj2': 'm4a',
  ogg: 'ogg',
  'matroska,webm': 'webm',
  flac: 'flac',
  aac: 'aac',
};

export const AUDIO_CONTAINERS = [...new Set(Object.values(CONTAINERS))];
const DEMUXER_WHITELIST = Object.keys(CONTAINERS).join(',');

export interface DecodedAudio {
  /** mp3, wav, m4a, ogg, webm, flac or aac. */
  container: string;
  /** Seconds of audio actually decoded (the billing basis). */
  duration: number;
  sampleRate: number;
  /** Mono 16-bit samples; empty when only the duration was asked for. */
  pcm: Int16Array;
}

let resolvedFfmpeg: string | null = null;

/** The ffmpeg binary shipped in `@ffmpeg-installer/<platform>` (a separate GPL program, run as a child process). */
export function ffmpegPath(): string {
  if (resolvedFfmpeg) return resolvedFfmpeg;
  let binary: string;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, inside try: a missing package means the engine is unavailable
    binary = (require('@ffmpeg-installer/ffmpeg') as typeof import('@ffmpeg-installer/ffmpeg')).path;
  } catch (error) {
    throw new EngineUnavailableError('ffmpeg', (error as Error).message);
  }
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    // npm may skip the package's "chmod u+x" install script.
    chmodSync(binary, 0o755);
  }
  return (resolvedFfmpeg = binary);
}

interface FfmpegRun {
  stdout: Buffer;
  stderr: string;
  code: number | null;
}

/** Runs ffmpeg under the shared engine limiter with bounded time and output; stdin gets `input` when given. */
export async function runFfmpeg(
  args: string[],
  input?: Buffer,
  opts: { timeoutMs?: number; maxOutputBytes?: number; discardOutput?: boolean } & EngineCallOptions = {},
): Promise<FfmpegRun & { outputBytes: number }> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const run = await runEngineProcess(
    'ffmpeg',
    ffmpegPath(),
    ['-hide_banner', '-nostdin', '-loglevel', 'info', ...args],
    {
      key: opts.key,
      signal: opts.signal,
      input: input ?? Buffer.alloc(0),
      timeoutMs,
      timeoutError: () => new EngineInputError(`audio processing took longer than ${timeoutMs} ms`),
      maxOutputBytes: opts.maxOutputBytes ?? 512 * 1024 * 1024,
      outputError: () => new EngineInputError('decoded audio is too long'),
      discardOutput: opts.discardOutput,
    },
  );
  return { stdout: run.stdout, stderr: run.stderr, code: run.code, outputBytes: run.outputBytes };
}

/**
 * Decodes any accepted container to mono 16-bit PCM and measures its real length from the samples,
 * not from headers a client controls. Refuses non-audio and containers outside the list.
 */
export async function decodeAudio(
  bytes: Buffer,
  opts: { sampleRate?: number; keepPcm?: boolean; maxSeconds?: number; timeoutMs?: number } & EngineCallOptions = {},
): Promise<DecodedAudio> {
  const sampleRate = opts.sampleRate ?? 16_000;
  const keepPcm = opts.keepPcm ?? true;
  const maxSeconds = opts.maxSeconds ?? 4 * 3600;
  if (bytes.length === 0) throw new EngineInputError('audio file is empty');
  // A file, not a pipe: MP4/M4A keep their index at the end and need seeking.
  const dir = await fs.mkdtemp(path.join(tmpdir(), 'audio-'));
  const file = path.join(dir, 'input');
  try {
    await fs.writeFile(file, bytes, { mode: 0o600 });
    const run = await runFfmpeg(
      // Only the accepted demuxers, and only the local file: a playlist or reference file posing as audio
      // (HLS, concat, SDP, ...) can never make ffmpeg open a URL or another local file.
      [
        '-protocol_whitelist',
        'file',
        '-format_whitelist',
        DEMUXER_WHITELIST,
        '-i',
        file,
        '-map',
        '0:a:0',
        '-vn',
        '-ac',
        '1',
        '-ar',
        String(sampleRate),
        '-f',
        's16le',
        'pipe:1',
      ],
      undefined,
      {
        timeoutMs: opts.timeoutMs,
        maxOutputBytes: maxSeconds * sampleRate * 2,
        discardOutput: !keepPcm,
        key: opts.key,
        signal: opts.signal,
      },
    );
    const demuxer = /Input #0, ([^\s]+?), from/.exec(run.stderr)?.[1];
    // Formats outside the whitelist are not even probed: anything unrecognized is an unsupported format (415).
    if (!demuxer) throw new EngineInputError(`unsupported audio format: expected ${AUDIO_CONTAINERS.join(', ')}`);
    const container = CONTAINERS[demuxer];
    if (!container) throw new EngineInputError(`unsupported audio format: ${demuxer}`);
    if (run.code !== 0 || !hasAudioStream(run.stderr)) throw new EngineInputError('file has no decodable audio stream');
    const samples = Math.floor(run.outputBytes / 2);
    if (samples === 0) throw new EngineInputError('audio contains no samples');
    const pcm = keepPcm
      ? new Int16Array(run.stdout.buffer.slice(run.stdout.byteOffset, run.stdout.byteOffset + samples * 2))
      : new Int16Array(0);
    return { container, duration: samples / sampleRate, sampleRate, pcm };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** ffmpeg listed an audio stream of the input: a line "Stream #0:N...: Audio:" (line by line, no backtracking regex). */
function hasAudioStream(stderr: string): boolean {
  return stderr.split('\n').some((line) => line.trimStart().startsWith('Stream #0:') && line.includes(': Audio:'));
}

/** A canonical 44-byte-header PCM WAV. */
export function encodeWav(pcm: Int16Array, sampleRate: number): Buffer {
  const data = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  return Buffer.concat([wavHeader(sampleRate, data.length), data]);
}

/**
 * The 44-byte header of mono 16-bit PCM WAV. Without `dataBytes` (an answer sent while it is still being
 * made) both sizes are 0xFFFFFFFF, which players and ffmpeg read as "until the end of the stream".
 */
export function wavHeader(sampleRate: number, dataBytes?: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(dataBytes === undefined ? 0xffffffff : 36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes === undefined ? 0xffffffff : dataBytes, 40);
  return header;
}

const FFMPEG_ENCODINGS = {
  ogg: ['-c:a', 'libvorbis', '-q:a', '3', '-f', 'ogg'],
  opus: ['-c:a', 'libopus', '-b:a', '32k', '-ar', '24000', '-f', 'ogg'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
  aac: ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'],
} as const;

/** Encodes mono 16-bit PCM through ffmpeg: Ogg Vorbis, Ogg Opus, FLAC or AAC (ADTS). */
export async function encodeWithFfmpeg(
  pcm: Int16Array,
  sampleRate: number,
  format: keyof typeof FFMPEG_ENCODINGS,
  call: EngineCallOptions = {},
): Promise<Buffer> {
  const input = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  const run = await runFfmpeg(
    ['-f', 's16le', '-ar', String(sampleRate), '-ac', '1', '-i', 'pipe:0', ...FFMPEG_ENCODINGS[format], 'pipe:1'],
    input,
    call,
  );
  if (run.code !== 0 || run.stdout.length === 0)
    throw new Error(`${format} encoding failed: ${run.stderr.slice(-300)}`);
  return run.stdout;
}

/** Ogg Vorbis. */
export function encodeOgg(pcm: Int16Array, sampleRate: number, call: EngineCallOptions = {}): Promise<Buffer> {
  return encodeWithFfmpeg(pcm, sampleRate, 'ogg', call);
}

/** Resamples mono 16-bit PCM (linear interpolation; enough for speech). */
export function resamplePcm(pcm: Int16Array, from: number, to: number): Int16Array {
  if (from === to) return pcm;
  const out = new Int16Array(Math.floor((pcm.length * to) / from));
  const step = from / to;
  for (let i = 0; i < out.length; i++) {
    const pos = i * step;
    const j = Math.floor(pos);
    const frac = pos - j;
    const a = pcm[j] ?? 0;
    const b = pcm[j + 1] ?? a;
    out[i] = Math.round(a + (b - a) * frac);
  }
  return out;
}

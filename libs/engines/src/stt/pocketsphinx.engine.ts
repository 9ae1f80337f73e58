import { accessSync, constants, existsSync, promises as fs } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { EngineAbortedError, EngineCallOptions } from '../engine-limiter';
import { runEngineProcess } from '../engine-process';
import { EngineUnavailableError } from '../engine-worker';

export interface TranscriptSegment {
  text: string;
  start: number;
  end: number;
}

export interface Transcript {
  text: string;
  language: string;
  segments: TranscriptSegment[];
}

/** The sample rate the engine expects (mono 16-bit PCM). */
export const STT_SAMPLE_RATE = 16_000;

const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

function findOnPath(binary: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const full = path.join(dir, binary);
    try {
      accessSync(full, constants.X_OK);
      return full;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * English speech-to-text with CMU PocketSphinx from Debian (`apt-get install pocketsphinx
 * pocketsphinx-en-us`), run as a child process per call. No offline model ships on npm, so this is
 * the only local option; accuracy is weak. `available` is false when the package is not installed.
 */
export class PocketsphinxEngine {
  private static instance: PocketsphinxEngine | null = null;
  readonly binary: string | null;
  readonly languages = ['en'];

  constructor(opts: { binary?: string | null; modelDir?: string } = {}) {
    const modelDir = opts.modelDir ?? DEFAULT_MODEL_DIR;
    const binary = opts.binary === undefined ? findOnPath('pocketsphinx_continuous') : opts.binary;
    this.binary = binary && existsSync(path.join(modelDir, 'en-us', 'mdef')) ? binary : null;
  }

  /** One per process; detection runs once. */
  static shared(): PocketsphinxEngine {
    return (PocketsphinxEngine.instance ??= new PocketsphinxEngine());
  }

  get available(): boolean {
    return this.binary !== null;
  }

  /** True for English (`en`, `en-US`, ...). */
  supports(language: string | undefined): boolean {
    return !language || language.toLowerCase().split(/[-_]/)[0] === 'en';
  }

  /**
   * Transcribes mono 16 kHz PCM; segments are the decoder's utterances (split on silence). The child
   * process runs under the shared engine limiter (per key and per process) and is killed when
   * `opts.signal` aborts.
   */
  async transcribe(pcm: Int16Array, opts: { timeoutMs?: number } & EngineCallOptions = {}): Promise<Transcript> {
    if (!this.binary) throw new EngineUnavailableError('stt', 'pocketsphinx is not installed');
    if (opts.signal?.aborted) throw new EngineAbortedError();
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const dir = await fs.mkdtemp(path.join(tmpdir(), 'stt-'));
    const file = path.join(dir, 'audio.raw');
    try {
      await fs.writeFile(file, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), { mode: 0o600 });
      const run = await runEngineProcess(
        'stt',
        this.binary,
        ['-infile', file, '-time', 'yes', '-samprate', String(STT_SAMPLE_RATE), '-logfn', '/dev/null'],
        {
          key: opts.key,
          signal: opts.signal,
          timeoutMs,
          timeoutError: () =>
            new EngineUnavailableError('stt', `pocketsphinx killed (no answer within ${timeoutMs} ms)`),
        },
      );
      if (run.code !== 0)
        throw new EngineUnavailableError(
          'stt',
          run.signal ? `pocketsphinx killed (${run.signal})` : `pocketsphinx exited with ${run.code}`,
        );
      return parseTimedOutput(run.stdout.toString('utf8'));
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }
}

const FILLERS = /^(<s>|<\/s>|<sil>|\[.*\]|\+\+.*\+\+)$/i;

/**
 * `-time yes` prints, per utterance, the hypothesis line and then one "word start end confidence"
 * line per word between <s> and </s>; alternates carry "(2)".
 */
export function parseTimedOutput(output: string): Transcript {
  const segments: TranscriptSegment[] = [];
  let words: Array<{ word: string; start: number; end: number }> = [];
  const flush = () => {
    if (words.length) {
      segments.push({
        text: words.map((w) => w.word).join(' '),
        start: words[0].start,
        end: words[words.length - 1].end,
      });
    }
    words = [];
  };
  for (const line of output.split('\n')) {
    const m = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (-?\d+(?:\.\d+)?)$/.exec(line.trim());
    if (!m) continue;
    const token = m[1];
    if (token === '<s>') flush();
    else if (token === '</s>') flush();
    else if (!FILLERS.test(token))
      words.push({ word: token.replace(/\(\d+\)$/, ''), start: Number(m[2]), end: Number(m[3]) });
  }
  flush();
  return { text: segments.map((s) => s.text).join(' '), language: 'en', segments };
}

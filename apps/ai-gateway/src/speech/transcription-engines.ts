import { Injectable, Logger } from '@nestjs/common';
import { EngineCallOptions, encodeWav, PocketsphinxEngine, STT_SAMPLE_RATE, Transcript } from '@app/engines';
import { OpenAiMediaClient } from '@app/llm';
import { GatewayConfig } from '../config/gateway.config';
import { EngineLimits } from '../vision/engine-limits';
import { GatewayError, GatewayErrorCode } from '../errors';

// OpenAI's verbose_json names the language ("english"); the contract answers a code.
const LANGUAGE_CODES: Record<string, string> = {
  chinese: 'zh',
  english: 'en',
  japanese: 'ja',
  korean: 'ko',
  french: 'fr',
  german: 'de',
  spanish: 'es',
  russian: 'ru',
  portuguese: 'pt',
  italian: 'it',
  arabic: 'ar',
  hindi: 'hi',
  cantonese: 'yue',
  vietnamese: 'vi',
  thai: 'th',
  indonesian: 'id',
};

/** The code of the language an upstream named (its answer, not trusted): own table entries only, so `constructor` stays `constructor`. */
export function languageCode(name: string | undefined): string {
  if (typeof name !== 'string' || !name) return 'unknown';
  const key = name.toLowerCase();
  return Object.hasOwn(LANGUAGE_CODES, key) ? LANGUAGE_CODES[key] : name;
}

export interface EngineTranscript extends Transcript {
  provider: 'upstream' | 'pocketsphinx';
  /** The upstream's own answer (passthrough calls of the OpenAI alias). */
  raw?: { body: Buffer; contentType: string };
}

/** The OpenAI alias's output fields, passed to an upstream as the caller gave them. */
export interface TranscriptionPassthrough {
  responseFormat: string;
  timestampGranularities?: string[];
  prompt?: string;
  temperature?: number;
  /** Further fields as the caller sent them (chunking_strategy[...], known_speaker_names[], include[], ...). */
  extra?: Array<[string, string]>;
}

/**
 * Who turns speech into text: the OpenAI-compatible upstream when AI_TRANSCRIBE_BASE_URL is set,
 * else PocketSphinx (English, when installed and AI_LOCAL_STT), else nobody (503, never a made-up text).
 */
@Injectable()
export class TranscriptionEngines {
  private readonly upstream: OpenAiMediaClient | null;
  private readonly local: PocketsphinxEngine | null;

  constructor(
    private readonly config: GatewayConfig,
    // Injected so the AI_ENGINE_* caps are applied before the first engine call.
    readonly limits: EngineLimits,
  ) {
    this.upstream = config.AI_TRANSCRIBE_BASE_URL
      ? new OpenAiMediaClient({
          baseUrl: config.AI_TRANSCRIBE_BASE_URL,
          apiKey: config.AI_TRANSCRIBE_API_KEY,
          timeoutMs: config.AI_MEDIA_UPSTREAM_TIMEOUT_MS,
        })
      : null;
    const sphinx = PocketsphinxEngine.shared();
    this.local = config.AI_LOCAL_STT && sphinx.available ? sphinx : null;
    if (!this.upstream) {
      new Logger('Speech').log(
        this.local
          ? 'transcription: local PocketSphinx (English only)'
          : 'transcription: no engine (set AI_TRANSCRIBE_BASE_URL or install pocketsphinx); speech-to-text answers 503',
      );
    }
  }

  /** Throws 503 unless some engine can transcribe `language`; says whether it needs decoded PCM. */
  check(language?: string): { needsPcm: boolean } {
    if (this.upstream) return { needsPcm: false };
    if (this.local?.supports(language)) return { needsPcm: true };
    if (this.local) throw new GatewayError(GatewayErrorCode.SpeechLanguageUnavailable, { language });
    throw new GatewayError(GatewayErrorCode.SpeechToTextUnconfigured);
  }

  /** Whether calls go to the OpenAI-compatible upstream (true) or the local engine. */
  get upstreamServes(): boolean {
    return this.upstream !== null;
  }

  /**
   * A whole file: the upstream receives the original bytes (as `model`, the upstream name of the
   * caller's model; default AI_TRANSCRIBE_MODEL), the local engine the decoded 16 kHz PCM. With
   * `passthrough` the upstream's answer in the caller's response_format is returned as it is (`raw`).
   */
  async transcribeFile(
    file: { bytes: Buffer; filename: string; pcm: Int16Array },
    language?: string,
    call: EngineCallOptions = {},
    model: string = this.config.AI_TRANSCRIBE_MODEL,
    passthrough?: TranscriptionPassthrough,
  ): Promise<EngineTranscript> {
    this.check(language);
    if (this.upstream && passthrough) {
      const raw = await this.upstream.transcribeRaw(
        { model, file: file.bytes, filename: file.filename, language, ...passthrough },
        call.signal,
      );
      return { text: '', language: language ?? 'unknown', segments: [], provider: 'upstream', raw };
    }
    if (this.upstream) {
      const t = await this.upstream.transcribe(
        { model, file: file.bytes, filename: file.filename, language },
        call.signal,
      );
      return {
        text: t.text,
        language: language ?? languageCode(t.language),
        segments: t.segments,
        provider: 'upstream',
      };
    }
    return { ...(await this.local!.transcribe(file.pcm, call)), provider: 'pocketsphinx' };
  }

  /** `/v1/audio/translations` upstream; the service refuses it first when only the local engine serves (it cannot translate). */
  async translateFile(
    file: { bytes: Buffer; filename: string },
    model: string,
    passthrough: TranscriptionPassthrough,
    signal?: AbortSignal,
  ): Promise<{ body: Buffer; contentType: string }> {
    if (!this.upstream) throw new GatewayError(GatewayErrorCode.SpeechToTextUnconfigured);
    return this.upstream.transcribeRaw(
      { model, file: file.bytes, filename: file.filename, ...passthrough },
      signal,
      '/audio/translations',
    );
  }

  /**
   * `stream=true`: the upstream's transcript.text.delta / transcript.text.done events as it sends them.
   * The local engine is not incremental: it transcribes the whole file, then one delta per utterance
   * (segment) and the done event with the whole text.
   */
  async transcribeStream(
    file: { bytes: Buffer; filename: string; pcm: Int16Array },
    language: string | undefined,
    call: EngineCallOptions,
    model: string,
    passthrough: TranscriptionPassthrough,
  ): Promise<AsyncIterable<Record<string, unknown>>> {
    this.check(language);
    if (this.upstream)
      return this.upstream.transcribeStream(
        { model, file: file.bytes, filename: file.filename, language, ...passthrough },
        call.signal,
      );
    const t = await this.local!.transcribe(file.pcm, call);
    return (async function* () {
      for (const [i, s] of t.segments.entries())
        yield { type: 'transcript.text.delta', delta: i === 0 ? s.text : ` ${s.text}` };
      yield { type: 'transcript.text.done', text: t.text };
    })();
  }

  /** A stretch of live audio (mono 16 kHz PCM); `call` carries the key's share and the session's end. */
  async transcribePcm(pcm: Int16Array, language?: string, call: EngineCallOptions = {}): Promise<EngineTranscript> {
    this.check(language);
    if (this.upstream) {
      const t = await this.upstream.transcribe(
        {
          model: this.config.AI_TRANSCRIBE_MODEL,
          file: encodeWav(pcm, STT_SAMPLE_RATE),
          filename: 'segment.wav',
          language,
        },
        call.signal,
      );
      return {
        text: t.text,
        language: language ?? languageCode(t.language),
        segments: t.segments,
        provider: 'upstream',
      };
    }
    return { ...(await this.local!.transcribe(pcm, call)), provider: 'pocketsphinx' };
  }
}

/** A refusal of what the local engine cannot do, naming why (a 400, before any work or charge). */
export function localCannot(message: string, param: string): GatewayError {
  return new GatewayError(GatewayErrorCode.UnsupportedParameter, { message, param });
}

import { GatewayError, GatewayErrorCode } from '../errors';
import type { OpenAiTranscriptionRequest } from './dtos/speech.dto';
import { localCannot } from './transcription-engines';

const VAD_FIELDS = ['prefix_padding_ms', 'silence_duration_ms', 'threshold'];

/**
 * `chunking_strategy` as form fields for the upstream: `auto`, or the server_vad object in the
 * bracket form OpenAI's SDK sends (`chunking_strategy[type]=server_vad`, multer reads it back as an
 * object); a JSON text of that object is accepted too.
 */
export function chunkingFields(value: unknown): Array<[string, string]> {
  if (value === undefined) return [];
  let v: unknown = value;
  if (typeof v === 'string' && v.trim().startsWith('{')) {
    try {
      v = JSON.parse(v);
    } catch {
      v = undefined;
    }
  }
  if (v === 'auto') return [['chunking_strategy', 'auto']];
  const bad = () =>
    new GatewayError(GatewayErrorCode.InvalidValue, {
      message:
        'chunking_strategy must be "auto" or {type: "server_vad", prefix_padding_ms?, silence_duration_ms?, threshold?}',
      param: 'chunking_strategy',
    });
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad();
  const o = v as Record<string, unknown>;
  if (o.type !== 'server_vad' || Object.keys(o).some((k) => k !== 'type' && !VAD_FIELDS.includes(k))) throw bad();
  const out: Array<[string, string]> = [['chunking_strategy[type]', 'server_vad']];
  for (const k of VAD_FIELDS) {
    if (o[k] === undefined) continue;
    const n = Number(o[k]);
    if (!Number.isFinite(n) || n < 0) throw bad();
    out.push([`chunking_strategy[${k}]`, String(n)]);
  }
  return out;
}

/** The newer transcription fields passed to an upstream as given (in OpenAI's form spelling). */
export function extraTranscriptionFields(body: OpenAiTranscriptionRequest): Array<[string, string]> {
  return [
    ...chunkingFields(body.chunking_strategy),
    ...(body.known_speaker_names ?? []).map((n): [string, string] => ['known_speaker_names[]', n]),
    ...(body.known_speaker_references ?? []).map((r): [string, string] => ['known_speaker_references[]', r]),
    ...(body.include ?? []).map((i): [string, string] => ['include[]', i]),
  ];
}

/** What the local engine cannot make: a 400 naming the field and why, before any work or charge. */
export function refuseForLocalEngine(body: OpenAiTranscriptionRequest): void {
  if (body.timestamp_granularities?.includes('word'))
    throw new GatewayError(GatewayErrorCode.WordTimestampsUnavailable);
  if (body.response_format === 'diarized_json')
    throw localCannot(
      'response_format diarized_json needs the transcription upstream (AI_TRANSCRIBE_BASE_URL): the local PocketSphinx engine does not tell speakers apart',
      'response_format',
    );
  if (body.known_speaker_names?.length || body.known_speaker_references?.length) {
    throw localCannot(
      'known_speaker_names and known_speaker_references need the transcription upstream (AI_TRANSCRIBE_BASE_URL): the local PocketSphinx engine does not tell speakers apart',
      body.known_speaker_names?.length ? 'known_speaker_names' : 'known_speaker_references',
    );
  }
  if (body.include?.length)
    throw localCannot(
      'include logprobs needs the transcription upstream (AI_TRANSCRIBE_BASE_URL): the local PocketSphinx engine gives no log probabilities',
      'include',
    );
  if (body.stream && body.response_format && body.response_format !== 'json' && body.response_format !== 'text') {
    throw localCannot(
      `stream with response_format ${body.response_format} is not available: streamed transcripts are text deltas`,
      'response_format',
    );
  }
}

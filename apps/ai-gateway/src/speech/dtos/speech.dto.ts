import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsNumber,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';
import { VOICES } from '@app/engines';

const toBoolean = ({ value }: { value: unknown }) =>
  value === 'true' || value === true ? true : value === 'false' || value === false ? false : value;

export class TranscribeRequest {
  @ApiProperty({ type: 'string', format: 'binary', description: 'Audio: mp3, wav, m4a, ogg, webm, flac (or aac)' })
  @IsOptional() // the upload itself arrives through multer, not the body
  file?: unknown;

  @ApiPropertyOptional({
    description: 'Language code, e.g. en or zh; default automatic detection (upstream)',
    example: 'en',
  })
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/, {
    message: 'language must be a language code such as en or zh-CN',
  })
  language?: string;

  @ApiPropertyOptional({ description: 'Return segments with start and end times', default: false })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  timestamps?: boolean;
}

class TranscriptSegment {
  @ApiProperty({ example: 'hello world' }) text: string;
  @ApiProperty({ example: 0.16 }) start: number;
  @ApiProperty({ example: 0.89 }) end: number;
}

export class TranscribeResponse {
  @ApiProperty({ example: 'hello world' }) text: string;
  @ApiProperty({ example: 'en' }) language: string;
  @ApiProperty({ example: 3.37, description: 'Seconds, measured from the decoded audio (the billing basis)' })
  duration: number;
  @ApiProperty({ type: [TranscriptSegment], description: 'Filled when timestamps is true' })
  segments: TranscriptSegment[];
}

export const TRANSCRIPTION_FORMATS = ['json', 'text', 'srt', 'vtt', 'verbose_json', 'diarized_json'];
export const TRANSLATION_FORMATS = ['json', 'text', 'srt', 'vtt', 'verbose_json'];

/** OpenAI `POST /v1/audio/transcriptions` form fields (alias). */
export class OpenAiTranscriptionRequest {
  @ApiProperty({ type: 'string', format: 'binary' }) @IsOptional() file?: unknown;
  @ApiPropertyOptional({ example: 'whisper-1' }) @IsOptional() @IsString() model?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @Matches(/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/) language?: string;
  @ApiPropertyOptional({
    enum: TRANSCRIPTION_FORMATS,
    default: 'json',
    description: 'Passed to an upstream as given; the local engine makes each of them from its utterance times.',
  })
  @IsOptional()
  @IsIn(TRANSCRIPTION_FORMATS)
  response_format?: string;
  @ApiPropertyOptional({ maxLength: 4000 }) @IsOptional() @IsString() @MaxLength(4000) prompt?: string;
  @ApiPropertyOptional({ minimum: 0, maximum: 1 })
  @IsOptional()
  @Type(() => Number)
  @IsNumber()
  @Min(0)
  @Max(1)
  temperature?: number;
  @ApiPropertyOptional({
    name: 'timestamp_granularities[]',
    type: [String],
    enum: ['word', 'segment'],
    example: ['word', 'segment'],
    description:
      'With verbose_json: word and/or segment timestamps (upstream). The local engine gives segment times only (word: 400).',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? [value] : value))
  @IsArray()
  @ArrayMaxSize(2)
  @IsIn(['word', 'segment'], { each: true })
  timestamp_granularities?: string[];
  @ApiPropertyOptional({
    name: 'include[]',
    type: [String],
    enum: ['logprobs'],
    description: 'Upstream only (the local engine has no log probabilities: 400).',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? [value] : value))
  @IsArray()
  @ArrayMaxSize(1)
  @IsIn(['logprobs'], { each: true })
  include?: string[];
  @ApiPropertyOptional({
    default: false,
    description:
      'Server-sent events transcript.text.delta and transcript.text.done. Upstream: its events as sent; local engine: one delta per utterance once the file is transcribed.',
  })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  stream?: boolean;
  @ApiPropertyOptional({
    oneOf: [
      { type: 'string', enum: ['auto'] },
      {
        type: 'object',
        properties: {
          type: { type: 'string', enum: ['server_vad'] },
          prefix_padding_ms: { type: 'integer' },
          silence_duration_ms: { type: 'integer' },
          threshold: { type: 'number' },
        },
      },
    ],
    description:
      'Passed upstream (`chunking_strategy=auto`, or `chunking_strategy[type]=server_vad` and its fields). The local engine cuts the audio at silences anyway and ignores it.',
  })
  @IsOptional()
  chunking_strategy?: unknown;
  @ApiPropertyOptional({
    name: 'known_speaker_names[]',
    type: [String],
    maxItems: 4,
    description: 'Diarization (upstream only; the local engine: 400).',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? [value] : value))
  @IsArray()
  @ArrayMaxSize(4)
  @IsString({ each: true })
  @MaxLength(200, { each: true })
  known_speaker_names?: string[];
  @ApiPropertyOptional({
    name: 'known_speaker_references[]',
    type: [String],
    maxItems: 4,
    description: 'data: URLs of short speaker samples, paired with known_speaker_names (upstream only).',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? [value] : value))
  @IsArray()
  @ArrayMaxSize(4)
  @IsString({ each: true })
  @Matches(/^data:audio\/[\w.+-]+;base64,/, {
    each: true,
    message: 'known_speaker_references must be data:audio/...;base64 URLs',
  })
  known_speaker_references?: string[];
}

/** OpenAI `POST /v1/audio/translations` form fields: audio to English text (upstream only). */
export class OpenAiTranslationRequest {
  @ApiProperty({ type: 'string', format: 'binary', description: 'Audio: mp3, wav, m4a, ogg, webm, flac (or aac)' })
  @IsOptional()
  file?: unknown;
  @ApiPropertyOptional({ example: 'whisper-1' }) @IsOptional() @IsString() model?: string;
  @ApiPropertyOptional({ maxLength: 4000, description: 'English text to guide the style' })
  @IsOptional()
  @IsString()
  @MaxLength(4000)
  prompt?: string;
  @ApiPropertyOptional({ enum: TRANSLATION_FORMATS, default: 'json' })
  @IsOptional()
  @IsIn(TRANSLATION_FORMATS)
  response_format?: string;
  @ApiPropertyOptional({ minimum: 0, maximum: 1 })
  @IsOptional()
  @Type(() => Number)
  @IsNumber()
  @Min(0)
  @Max(1)
  temperature?: number;
}

export class SynthesizeRequest {
  @ApiProperty({ description: 'Text to speak, at most 5000 characters', example: '你好，欢迎使用语音合成服务。' })
  @IsString()
  @MinLength(1)
  @MaxLength(5000)
  text: string;

  @ApiPropertyOptional({ enum: Object.keys(VOICES), default: 'zh-CN-XiaoxiaoNeural' })
  @IsOptional()
  @IsIn(Object.keys(VOICES))
  voice?: string;

  @ApiPropertyOptional({ enum: ['mp3', 'wav', 'ogg'], default: 'mp3' })
  @IsOptional()
  @IsIn(['mp3', 'wav', 'ogg'])
  format?: 'mp3' | 'wav' | 'ogg';

  @ApiPropertyOptional({ minimum: 0.5, maximum: 2, default: 1 })
  @IsOptional()
  @IsNumber()
  @Min(0.5)
  @Max(2)
  speed?: number;
}

/** OpenAI voices mapped onto the contract's voices (for the `/v1/audio/speech` alias). */
export const OPENAI_VOICES: Record<string, string> = {
  alloy: 'en-US-JennyNeural',
  ash: 'en-US-GuyNeural',
  ballad: 'en-US-GuyNeural',
  coral: 'en-US-JennyNeural',
  echo: 'en-US-GuyNeural',
  fable: 'en-US-GuyNeural',
  onyx: 'en-US-GuyNeural',
  nova: 'en-US-JennyNeural',
  sage: 'en-US-JennyNeural',
  shimmer: 'en-US-JennyNeural',
  verse: 'en-US-GuyNeural',
  marin: 'en-US-JennyNeural',
  cedar: 'en-US-GuyNeural',
};

/** OpenAI `POST /v1/audio/speech` (alias). */
export class OpenAiSpeechRequest {
  @ApiPropertyOptional({ example: 'tts-1' }) @IsOptional() @IsString() model?: string;
  @ApiProperty({ maxLength: 5000 }) @IsString() @MinLength(1) @MaxLength(5000) input: string;
  @ApiProperty({ description: 'An OpenAI voice (alloy, echo, nova, ...) or a contract voice id' })
  @IsString()
  @IsIn([...Object.keys(OPENAI_VOICES), ...Object.keys(VOICES)])
  voice: string;
  @ApiPropertyOptional({ enum: ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] })
  @IsOptional()
  @IsIn(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'])
  response_format?: string;
  @ApiPropertyOptional({ minimum: 0.5, maximum: 2 }) @IsOptional() @IsNumber() @Min(0.5) @Max(2) speed?: number;
  @ApiPropertyOptional() @IsOptional() @IsString() instructions?: string;
  @ApiPropertyOptional({
    enum: ['audio', 'sse'],
    default: 'audio',
    description:
      'sse: server-sent events speech.audio.delta (base64 audio) and speech.audio.done. The local engine synthesizes the whole text first: one delta, then done.',
  })
  @IsOptional()
  @IsIn(['audio', 'sse'])
  stream_format?: 'audio' | 'sse';
}

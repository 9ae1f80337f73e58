import {
  IsBoolean,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  IsTimeZone,
  Matches,
  Max,
  Min,
  MinLength,
} from 'class-validator';
import { BaseConfig } from '@app/platform';

/** Every variable the AI gateway reads, validated at boot. */
export class GatewayConfig extends BaseConfig {
  /** HTTP and WebSocket port. */
  @IsInt()
  @Min(1)
  @Max(65535)
  AI_GATEWAY_PORT: number = 8081;

  /** Bearer token of the admin API (/admin/**); the admin API is closed when unset. */
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters' })
  ADMIN_TOKEN?: string;

  // --- Operators signed in through membership (docs/membership/console.md) ---

  /** Membership's JSON Web Key Set, e.g. https://member.example.com/.well-known/jwks.json: its admin and viewer access tokens are accepted on /admin/** besides ADMIN_TOKEN. Unset: ADMIN_TOKEN only. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  MEMBERSHIP_JWKS_URL?: string;

  /** `iss` membership tokens must carry (membership's ACCESS_TOKEN_ISSUER). */
  @IsString()
  @Matches(/^\S{1,200}$/, { message: 'must be 1-200 characters without spaces' })
  MEMBERSHIP_TOKEN_ISSUER: string = 'membership';

  /** `aud` membership tokens must include (membership's OPERATOR_TOKEN_AUDIENCE; only admin and viewer tokens carry it). */
  @IsString()
  @Matches(/^\S{1,200}$/, { message: 'must be 1-200 characters without spaces' })
  MEMBERSHIP_TOKEN_AUDIENCE: string = 'ai-gateway';

  /** How long a replica uses the fetched key set before fetching it again (ms); membership serves it with max-age 300 s. */
  @IsInt()
  @Min(10_000)
  @Max(86_400_000)
  MEMBERSHIP_JWKS_CACHE_MS: number = 300_000;

  /** Least time between two fetches of the key set on one replica (ms): a token naming an unknown kid fetches it at most this often. */
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  MEMBERSHIP_JWKS_REFRESH_MIN_MS: number = 30_000;

  /** Time limit of one key-set fetch (ms). */
  @IsInt()
  @Min(100)
  @Max(60_000)
  MEMBERSHIP_JWKS_TIMEOUT_MS: number = 5000;

  /** Origin of the operator console (membership's {base_url} origin, e.g. https://member.example.com): allowed by CORS besides CORS_ORIGINS. */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/]+$/, { message: 'must be an origin like https://member.example.com (no path)' })
  CONSOLE_ORIGIN?: string;

  /** Public address of generated media; default `{base_url}/cdn` served by the gateway. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  CDN_URL?: string;

  // --- Telemetry: GenAI spans and metrics of upstream calls (libs/llm/src/genai-telemetry.ts) ---

  /** Record message content (prompts, answers) on GenAI spans as gen_ai.input.messages / gen_ai.output.messages; off: never recorded. */
  @IsBoolean()
  AI_OTEL_CAPTURE_CONTENT: boolean = false;

  /** OTLP/HTTP URL the GenAI metrics are posted to; default `${OTEL_EXPORTER_OTLP_ENDPOINT}/v1/metrics`; neither set: Prometheus only. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?: string;

  /** Milliseconds between OTLP metric exports. */
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  OTEL_METRIC_EXPORT_INTERVAL: number = 60_000;

  // --- AI gateway core: keys, metering, routing ---

  /** Providers file (YAML or JSON): upstream deployments, model names, prices; unset means no chat/embeddings upstream (503). */
  @IsOptional()
  @IsString()
  AI_PROVIDERS_FILE?: string;

  /** How long an API key lookup is cached per replica (ms); revocation takes effect within this time. */
  @IsInt()
  @Min(0)
  @Max(60_000)
  AI_KEY_CACHE_TTL_MS: number = 5000;

  /**
   * Refusals a caller could have avoided are answered after this long (ms), on the app's clock (RefusalHold
   * in apps/ai-gateway/src/limits/refusal-hold.ts): a key refused for requests_per_minute calling again before
   * its retry time (remembered per replica, RefusedUntil; never held past that time; its first refusal is
   * answered at once) and a missing, unknown, revoked or expired key (counted against its address first).
   * A client calling again at once is slowed to one call per connection per hold; one refusal per
   * connection is held at a time. 0 answers every refusal at once.
   */
  @IsInt()
  @Min(0)
  @Max(60_000)
  AI_REFUSAL_HOLD_MS: number = 1000;

  /**
   * Bulk work gives way to calls: a slice of a count or an answer of thousands of items (embeddings inputs,
   * long prompts, an upstream's answer of thousands of vectors) waits, up to 10 ms, while the event loop was
   * busier than this share of the last 10 ms with other work than bulk slices
   * (apps/ai-gateway/src/limits/loop-headroom.ts). 1: no waiting.
   */
  @IsNumber()
  @Min(0.1)
  @Max(1)
  AI_BULK_LOOP_SHARE: number = 0.3;

  /** Usage ledger: flush interval of the batched writes (ms). */
  @IsInt()
  @Min(10)
  @Max(60_000)
  AI_LEDGER_FLUSH_MS: number = 1000;

  /**
   * Usage ledger: records per INSERT (a full batch is written at once). 1000 rather than 200: under
   * load smaller batches meant more commits competing for the cores that answer calls (npm run bench).
   */
  @IsInt()
  @Min(1)
  @Max(5000)
  AI_LEDGER_BATCH_SIZE: number = 1000;

  /** Unmetered reads (GET /v1/usage, GET and DELETE /v1/responses/{id}, its input_items) one key's share runs at once in a replica; more get 429. */
  @IsInt()
  @Min(1)
  @Max(100)
  AI_READS_PER_KEY: number = 4;

  /** Completion tokens reserved when a request sets no max_tokens (and sent upstream as its max_tokens / max_completion_tokens). */
  @IsInt()
  @Min(1)
  AI_COMPLETION_RESERVE_TOKENS: number = 4096;

  /** Embeddings cache lifetime per (model, dimensions, input) in ms; 0 disables the cache. */
  @IsInt()
  @Min(0)
  AI_EMBEDDINGS_CACHE_TTL_MS: number = 86_400_000;

  /** Most bytes of embeddings cache one API key may hold (keys and JSON vectors); a request whose vectors do not fit is answered but not cached; 0 disables the cache. */
  @IsInt()
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  AI_EMBEDDINGS_CACHE_MAX_BYTES_PER_KEY: number = 64 * 1024 * 1024;

  /** Most inputs of a request whose vectors are looked up in and written to the embeddings cache; larger batches bypass it; 0 disables the cache. */
  @IsInt()
  @Min(0)
  @Max(2048)
  AI_EMBEDDINGS_CACHE_MAX_INPUTS: number = 128;

  /**
   * Most bytes of embedding vectors (inputs x dimensions x 4) one API key's (or project's) calls fetch, parse and answer
   * at once in a replica; its further calls wait in order (a lone call always runs). Bounds the memory and the garbage
   * collections one key's bulk calls cause for everyone else. 0: no bound.
   */
  @IsInt()
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  AI_EMBEDDINGS_MAX_VECTOR_BYTES_PER_KEY: number = 16 * 1024 * 1024;

  /** Whether embeddings served from the cache are charged at the model price (the contract prices per token). */
  @IsBoolean()
  AI_EMBEDDINGS_CACHE_HITS_BILLED: boolean = true;

  /**
   * Longest a call's hold lives: budget holds and concurrency leases of calls that never settled (a killed
   * process) are released after it. Longer than any call may last (a stream counts until it ends).
   */
  @IsInt()
  @Min(60_000)
  AI_BUDGET_HOLD_TTL_MS: number = 3_600_000;

  /** IANA time zone in which daily, weekly (from Monday) and monthly budgets start again at midnight. */
  @IsString()
  @IsTimeZone()
  BUDGET_TIMEZONE: string = 'Asia/Shanghai';

  /** Lifetime of a stored response of /v1/responses (store: true) in hours; 0 stores nothing (every answer says store: false). */
  @IsInt()
  @Min(0)
  @Max(8760)
  AI_RESPONSES_STORE_TTL_HOURS: number = 24;

  /** Largest stored response (its input items, previous response included, output and the Response object kept for GET /v1/responses/{id}, as JSON, bytes); a larger one is answered but not stored (store: false). */
  @IsInt()
  @Min(1024)
  AI_RESPONSES_STORE_MAX_BYTES: number = 16 * 1024 * 1024;

  /** Most bytes (as AI_RESPONSES_STORE_MAX_BYTES counts them) one API key keeps stored at a time; a response past it is answered but not stored (store: false) until older ones expire. */
  @IsInt()
  @Min(1024)
  @Max(Number.MAX_SAFE_INTEGER)
  AI_RESPONSES_STORE_MAX_BYTES_PER_KEY: number = 256 * 1024 * 1024;

  /**
   * Most bytes of stored items (as AI_RESPONSES_STORE_MAX_BYTES counts them) one API key's requests may load per
   * minute through previous_response_id and item_reference, and by reading stored responses back (GET
   * /v1/responses/{id} and its input items, each counting the response's stored size), across replicas; past it
   * 429 until the next minute.
   * 0: no limit.
   */
  @IsInt()
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  AI_RESPONSES_LOAD_BYTES_PER_MINUTE: number = 64 * 1024 * 1024;

  /** Development only: when no usable API key exists at boot, create one and print it once. */
  @IsBoolean()
  AI_DEV_KEY: boolean = true;

  // --- media: vision, speech, local engines ---

  /** JSON body limit of the gateway; large enough for a base64 image of AI_MEDIA_MAX_IMAGE_BYTES. */
  @IsInt()
  @Min(1024)
  BODY_LIMIT_BYTES: number = 16 * 1024 * 1024;

  /** Most body bytes one key's (or its project's) JSON bodies hold at once in a replica while read: four bodies of BODY_LIMIT_BYTES. */
  @IsInt()
  @Min(1024)
  BODY_BYTES_PER_CALLER_MAX: number = 64 * 1024 * 1024;

  /**
   * Most body bytes all JSON bodies being read hold at once in a replica, shared out equally past it (body-budget.ts):
   * with AI_UPLOAD_BYTES_IN_FLIGHT_MAX, 768 MiB of the container's 2 GiB (deploy/k8s), the rest for the process,
   * the engines' models and the parsed bodies.
   */
  @IsInt()
  @Min(1024)
  BODY_BYTES_IN_FLIGHT_MAX: number = 384 * 1024 * 1024;

  /** Largest image accepted by /v1/vision/recognize (bytes, downloaded or decoded from base64). */
  @IsInt()
  @Min(1024)
  AI_MEDIA_MAX_IMAGE_BYTES: number = 10 * 1024 * 1024;

  /** Largest /v1/images/edits upload in all (images, mask and fields; by Content-Length, before it is read). */
  @IsInt()
  @Min(1024)
  AI_MEDIA_MAX_EDIT_BYTES: number = 64 * 1024 * 1024;

  /** Largest decoded image (width x height) the vision engines accept; guards against decompression bombs. */
  @IsInt()
  @Min(1)
  AI_MEDIA_MAX_PIXELS: number = 40_000_000;

  /** Time limit for downloading an image URL, all redirects included (ms). */
  @IsInt()
  @Min(100)
  AI_MEDIA_FETCH_TIMEOUT_MS: number = 10_000;

  /** Redirects followed when downloading an image URL (each hop is checked again). */
  @IsInt()
  @Min(0)
  @Max(10)
  AI_MEDIA_FETCH_MAX_REDIRECTS: number = 3;

  /** Comma-separated CIDRs image URLs may reach despite being private (for tests or a trusted intranet); empty in production. */
  @IsOptional()
  @IsString()
  AI_MEDIA_FETCH_ALLOWED_CIDRS?: string;

  /** Largest audio upload for transcription (bytes). */
  @IsInt()
  @Min(1024)
  AI_MEDIA_MAX_AUDIO_BYTES: number = 25 * 1024 * 1024;

  /**
   * Multipart uploads (/v1/images/edits, /v1/audio/transcriptions and translations, /v1/speech/transcribe) one API key's
   * share (its project's keys together, else the key) has in progress at once in a replica, from admission to answer
   * (their files are held in memory meanwhile); past it 429 before a byte of the body is read.
   */
  @IsInt()
  @Min(1)
  @Max(1000)
  AI_UPLOADS_PER_KEY: number = 4;

  /**
   * Bytes multipart uploads may hold at once in a replica, all keys together: each counts twice its Content-Length
   * (or the largest upload when chunked), its files being copied once into the form sent upstream; past it 503 before
   * a byte is read. Sized with BODY_BYTES_IN_FLIGHT_MAX to the 2 Gi container of deploy/k8s (768 MiB together); at least
   * twice AI_MEDIA_MAX_EDIT_BYTES.
   */
  @IsInt()
  @Min(1024)
  @Max(Number.MAX_SAFE_INTEGER)
  AI_UPLOAD_BYTES_IN_FLIGHT_MAX: number = 384 * 1024 * 1024;

  /** Longest audio accepted for transcription (seconds, measured from the decoded samples). */
  @IsInt()
  @Min(1)
  AI_MEDIA_MAX_AUDIO_SECONDS: number = 2 * 3600;

  /** Serve OCR, faces/objects/labels and speech synthesis with the in-process engines. */
  @IsBoolean()
  AI_LOCAL_ENGINES: boolean = true;

  /** Use PocketSphinx (Debian package) for English transcription when no upstream is set and it is installed. */
  @IsBoolean()
  AI_LOCAL_STT: boolean = true;

  /** OpenAI-compatible base URL (with /v1) for image generation; unset means /v1/vision/generate answers 503. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  AI_IMAGES_BASE_URL?: string;

  /** API key for AI_IMAGES_BASE_URL (sensitive). */
  @IsOptional()
  @IsString()
  AI_IMAGES_API_KEY?: string;

  /** Model sent to the image generation upstream. */
  @IsString()
  AI_IMAGES_MODEL: string = 'dall-e-3';

  /** Hours a generated image answered by URL is kept (object and row); then the sweep deletes it and its URL answers 404. */
  @IsInt()
  @Min(1)
  @Max(8760)
  AI_IMAGES_RETENTION_HOURS: number = 24;

  /** Most bytes of generated images one API key keeps stored (a call held at its images' largest size); past it 429 insufficient_quota before the upstream is called. */
  @IsInt()
  @Min(1024)
  @Max(Number.MAX_SAFE_INTEGER)
  AI_IMAGES_MAX_BYTES_PER_KEY: number = 1024 * 1024 * 1024;

  /** OpenAI-compatible base URL (with /v1) for /audio/transcriptions; unset means the local engine or 503. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  AI_TRANSCRIBE_BASE_URL?: string;

  /** API key for AI_TRANSCRIBE_BASE_URL (sensitive). */
  @IsOptional()
  @IsString()
  AI_TRANSCRIBE_API_KEY?: string;

  /** Model sent to the transcription upstream. */
  @IsString()
  AI_TRANSCRIBE_MODEL: string = 'whisper-1';

  /** Time limit of one media upstream call (ms). */
  @IsInt()
  @Min(100)
  AI_MEDIA_UPSTREAM_TIMEOUT_MS: number = 120_000;

  /** Live transcription: seconds a client has to send its config message before the socket closes with 4001. */
  @IsInt()
  @Min(100)
  AI_STREAM_CONFIG_TIMEOUT_MS: number = 5000;

  /** Live transcription: largest single message (bytes). */
  @IsInt()
  @Min(1024)
  AI_STREAM_MAX_MESSAGE_BYTES: number = 256 * 1024;

  /** Live transcription: longest session (seconds of audio; a session also ends at twice this of wall-clock time). */
  @IsInt()
  @Min(1)
  AI_STREAM_MAX_SECONDS: number = 3600;

  /** Live transcription: close a session idle this long (ms). */
  @IsInt()
  @Min(100)
  AI_STREAM_IDLE_TIMEOUT_MS: number = 30_000;

  // --- Local engine work (ffmpeg, PocketSphinx, OCR, vision, TTS, local embeddings, image decoding) ---

  /** Engine jobs (child processes, worker calls, image decodes) running at once in this replica; default: the CPU count. */
  @IsOptional()
  @IsInt()
  @Min(1)
  AI_ENGINE_MAX_CONCURRENT?: number;

  /** Of those, at most this many for one API key. */
  @IsInt()
  @Min(1)
  AI_ENGINE_MAX_CONCURRENT_PER_KEY: number = 2;

  /** Engine jobs waiting for a slot in this replica; beyond it requests get 503 engine_busy (streams close 4503). */
  @IsInt()
  @Min(0)
  AI_ENGINE_MAX_QUEUED: number = 32;

  /** Engine jobs one API key may have waiting; beyond it that key gets 429 engine_busy (streams close 4029). */
  @IsInt()
  @Min(0)
  AI_ENGINE_MAX_QUEUED_PER_KEY: number = 4;

  /**
   * The operator console calls /admin/** from membership's origin: CONSOLE_ORIGIN, else the origin of
   * MEMBERSHIP_JWKS_URL (membership serves both the console and its key set), besides CORS_ORIGINS.
   */
  override corsOrigins(): string[] {
    const origins = super.corsOrigins();
    const console =
      this.CONSOLE_ORIGIN ?? (this.MEMBERSHIP_JWKS_URL ? new URL(this.MEMBERSHIP_JWKS_URL).origin : undefined);
    return console && !origins.includes(console) && !origins.includes('*') ? [...origins, console] : origins;
  }
}

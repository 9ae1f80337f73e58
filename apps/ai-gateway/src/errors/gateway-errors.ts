import { HttpException } from '@nestjs/common';

/**
 * Every error the AI gateway raises on purpose. A use case throws `new GatewayError(code, params)`;
 * the catalog below decides the HTTP status, the OpenAI `type` and `code` and the message, and each
 * transport maps it once (HTTP: openAiErrorBody; WebSocket: the speech stream's streamError).
 */
export enum GatewayErrorCode {
  // Request validation: the validator words the message and names the field.
  InvalidValue = 'InvalidValue',
  InvalidType = 'InvalidType',
  UnknownParameter = 'UnknownParameter',
  MissingParameter = 'MissingParameter',
  UnsupportedParameter = 'UnsupportedParameter',
  ConversationNotStored = 'ConversationNotStored',
  WordTimestampsUnavailable = 'WordTimestampsUnavailable',
  ImageParameterUnsupported = 'ImageParameterUnsupported',
  DimensionsTooLarge = 'DimensionsTooLarge',
  DateInvalid = 'DateInvalid',
  DateRangeReversed = 'DateRangeReversed',
  DateRangeTooLong = 'DateRangeTooLong',
  MissingFile = 'MissingFile',
  UnsupportedLanguage = 'UnsupportedLanguage',
  // Models
  ModelNotFound = 'ModelNotFound',
  ModelNotVisible = 'ModelNotVisible',
  ModelKindMismatch = 'ModelKindMismatch',
  TextCompletionsUnsupported = 'TextCompletionsUnsupported',
  ContextLengthExceeded = 'ContextLengthExceeded',
  PromptTooLong = 'PromptTooLong',
  EmbeddingInputTooLong = 'EmbeddingInputTooLong',
  // Stored responses
  PreviousResponseNotFound = 'PreviousResponseNotFound',
  InputItemNotFound = 'InputItemNotFound',
  ResponseNotFound = 'ResponseNotFound',
  StoreUnavailable = 'StoreUnavailable',
  // Limits
  LimitsUnavailable = 'LimitsUnavailable',
  // Media inputs
  InvalidMediaInput = 'InvalidMediaInput',
  UnsupportedMediaType = 'UnsupportedMediaType',
  InvalidImageUrl = 'InvalidImageUrl',
  ImageUrlForbidden = 'ImageUrlForbidden',
  ImageFetchFailed = 'ImageFetchFailed',
  ImageTooLarge = 'ImageTooLarge',
  UploadTooLarge = 'UploadTooLarge',
  UploadLengthRequired = 'UploadLengthRequired',
  UploadsInFlightForKey = 'UploadsInFlightForKey',
  UploadsBusy = 'UploadsBusy',
  UploadTooSlow = 'UploadTooSlow',
  ImageNotFound = 'ImageNotFound',
  ImageStorageFull = 'ImageStorageFull',
  DownloadsFromNetwork = 'DownloadsFromNetwork',
  DownloadsBusy = 'DownloadsBusy',
  // Keys, scopes, limits
  ApiKeyMissing = 'ApiKeyMissing',
  ApiKeyIncorrect = 'ApiKeyIncorrect',
  ApiKeyRevoked = 'ApiKeyRevoked',
  ApiKeyExpired = 'ApiKeyExpired',
  ApiKeyNotFound = 'ApiKeyNotFound',
  ApiKeyNotRotatable = 'ApiKeyNotRotatable',
  ProjectNotFound = 'ProjectNotFound',
  ProjectHasKeys = 'ProjectHasKeys',
  WebhookEndpointNotFound = 'WebhookEndpointNotFound',
  WebhookDeliveryNotFound = 'WebhookDeliveryNotFound',
  WebhooksNotConfigured = 'WebhooksNotConfigured',
  ApiKeyRequired = 'ApiKeyRequired',
  AdminDisabled = 'AdminDisabled',
  AdminTokenInvalid = 'AdminTokenInvalid',
  AdminRoleRequired = 'AdminRoleRequired',
  AdminSecondFactorRequired = 'AdminSecondFactorRequired',
  AdminReadOnly = 'AdminReadOnly',
  MembershipKeysUnavailable = 'MembershipKeysUnavailable',
  ScopeNotAllowed = 'ScopeNotAllowed',
  ModelNotAllowed = 'ModelNotAllowed',
  RateLimited = 'RateLimited',
  TokenRateLimited = 'TokenRateLimited',
  RequestTooLarge = 'RequestTooLarge',
  StoredBytesRateLimited = 'StoredBytesRateLimited',
  ReadsInFlightForKey = 'ReadsInFlightForKey',
  InsufficientQuota = 'InsufficientQuota',
  BudgetExhausted = 'BudgetExhausted',
  // Routing and upstreams (libs/llm failures, see apps/ai-gateway routing/upstream-errors.ts)
  NoProvider = 'NoProvider',
  ClientClosedRequest = 'ClientClosedRequest',
  UpstreamRejectedRequest = 'UpstreamRejectedRequest',
  UpstreamCredentialsRefused = 'UpstreamCredentialsRefused',
  UpstreamFailed = 'UpstreamFailed',
  UpstreamTimeout = 'UpstreamTimeout',
  UpstreamBusy = 'UpstreamBusy',
  EmbeddingsCountMismatch = 'EmbeddingsCountMismatch',
  // Local engines (libs/engines failures, see apps/ai-gateway vision/media-errors.ts)
  EngineBusyForKey = 'EngineBusyForKey',
  EngineBusy = 'EngineBusy',
  EngineFailed = 'EngineFailed',
  EngineUnavailable = 'EngineUnavailable',
  LocalEnginesDisabled = 'LocalEnginesDisabled',
  SpeechSynthesisNotInstalled = 'SpeechSynthesisNotInstalled',
  SpeechLanguageUnavailable = 'SpeechLanguageUnavailable',
  SpeechToTextUnconfigured = 'SpeechToTextUnconfigured',
  ImageGenerationUnconfigured = 'ImageGenerationUnconfigured',
  // Live speech stream (WebSocket only: sent as an error event before the close)
  StreamConfigTimeout = 'StreamConfigTimeout',
  StreamConfigExpected = 'StreamConfigExpected',
  StreamConfigPending = 'StreamConfigPending',
  StreamInvalidConfig = 'StreamInvalidConfig',
  StreamApiKeyMissing = 'StreamApiKeyMissing',
  StreamAudioExpected = 'StreamAudioExpected',
  StreamIdleTimeout = 'StreamIdleTimeout',
  StreamMessageTooLarge = 'StreamMessageTooLarge',
  StreamSessionLimit = 'StreamSessionLimit',
  StreamSessionTooLong = 'StreamSessionTooLong',
  StreamSegmentFailed = 'StreamSegmentFailed',
  ServerShutdown = 'ServerShutdown',
}

/** The validation codes: the validator words the message and names the field. */
export type GatewayValidationCode =
  | GatewayErrorCode.InvalidValue
  | GatewayErrorCode.InvalidType
  | GatewayErrorCode.UnknownParameter
  | GatewayErrorCode.MissingParameter
  | GatewayErrorCode.UnsupportedParameter;

/** One catalog entry; `P` is what the thrower supplies (nothing for a fixed message). */
export interface GatewayErrorSpec<P = void> {
  status: number;
  type: string;
  /** The OpenAI `code`; a function only where it is taken from the failure (upstream's own code, media input name). */
  code: string | null | ((p: P) => string | null);
  message: (p: P) => string;
  param?: string | ((p: P) => string | null);
  retryAfterSeconds?: number | ((p: P) => number);
  /** false: a configuration fault no retry can fix; answered with `x-should-retry: false`. */
  retryable?: false;
}

interface Validation {
  message: string;
  param: string | null;
}
interface Upstream {
  /** The failed deployment (`upstream east`) or `upstream`. */
  where: string;
  detail: string;
}

const spec = <P = void>(s: GatewayErrorSpec<P>): GatewayErrorSpec<P> => s;
const BAD_REQUEST = { status: 400, type: 'invalid_request_error' } as const;
const UNAVAILABLE = { status: 503, type: 'service_unavailable' } as const;
const UNAUTHORIZED = { status: 401, type: 'invalid_request_error', code: 'invalid_api_key' } as const;
const FORBIDDEN = { status: 403, type: 'permission_error' } as const;
const NOT_FOUND = { status: 404, type: 'invalid_request_error' } as const;
const ENGINE_OFF = { ...UNAVAILABLE, code: 'engine_unavailable', retryable: false } as const;
const MODEL_PARAM = { param: 'model' } as const;
const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const validation = (code: string) =>
  spec<Validation>({ ...BAD_REQUEST, code, message: (p) => p.message, param: (p) => p.param });

export const GATEWAY_ERRORS = {
  [GatewayErrorCode.InvalidValue]: validation('invalid_value'),
  [GatewayErrorCode.InvalidType]: validation('invalid_type'),
  [GatewayErrorCode.UnknownParameter]: validation('unknown_parameter'),
  [GatewayErrorCode.MissingParameter]: validation('missing_required_parameter'),
  [GatewayErrorCode.UnsupportedParameter]: validation('unsupported_parameter'),
  [GatewayErrorCode.ConversationNotStored]: spec<{ param: string }>({
    ...BAD_REQUEST,
    code: 'unsupported_parameter',
    message: (p) =>
      `${p.param} is not supported: this gateway stores no conversations; send the conversation in input, or refer to a stored response with previous_response_id`,
    param: (p) => p.param,
  }),
  [GatewayErrorCode.WordTimestampsUnavailable]: spec({
    ...BAD_REQUEST,
    code: 'unsupported_parameter',
    message: () =>
      'timestamp_granularities word is not available: the local speech engine gives segment (utterance) times only',
    param: 'timestamp_granularities',
  }),
  [GatewayErrorCode.ImageParameterUnsupported]: spec<{ name: string; model: string }>({
    ...BAD_REQUEST,
    code: 'unsupported_parameter',
    message: (p) => `${p.name} is not supported by the image model ${p.model}`,
    param: (p) => p.name,
  }),
  [GatewayErrorCode.DimensionsTooLarge]: spec<{ max: number; model: string }>({
    ...BAD_REQUEST,
    code: 'invalid_value',
    message: (p) => `dimensions must be at most ${p.max} for ${p.model}`,
    param: 'dimensions',
  }),
  [GatewayErrorCode.DateInvalid]: spec<{ param: string }>({
    ...BAD_REQUEST,
    code: 'invalid_value',
    message: (p) => `${p.param} is not a real date`,
    param: (p) => p.param,
  }),
  [GatewayErrorCode.DateRangeReversed]: spec({
    ...BAD_REQUEST,
    code: 'invalid_value',
    message: () => 'start_date must not be after end_date',
    param: 'start_date',
  }),
  [GatewayErrorCode.DateRangeTooLong]: spec<{ maxDays: number }>({
    ...BAD_REQUEST,
    code: 'invalid_value',
    message: (p) => `at most ${p.maxDays} days per query`,
    param: 'start_date',
  }),
  [GatewayErrorCode.MissingFile]: spec({
    ...BAD_REQUEST,
    code: 'missing_file',
    message: () => 'file is required: send the audio as a multipart field named "file"',
    param: 'file',
  }),
  [GatewayErrorCode.UnsupportedLanguage]: spec<{ language: string; supported: readonly string[] }>({
    ...BAD_REQUEST,
    code: 'unsupported_language',
    message: (p) =>
      `language ${p.language} is not supported for text recognition; use one of ${p.supported.join(', ')}`,
    param: 'language',
  }),

  [GatewayErrorCode.ModelNotFound]: spec<{ model: string }>({
    ...NOT_FOUND,
    ...MODEL_PARAM,
    code: 'model_not_found',
    message: (p) => `The model ${p.model} does not exist`,
  }),
  // GET /v1/models/{model} does not tell a model this key may not use from one that does not exist.
  [GatewayErrorCode.ModelNotVisible]: spec<{ model: string }>({
    ...NOT_FOUND,
    ...MODEL_PARAM,
    code: 'model_not_found',
    message: (p) => `The model ${p.model} does not exist or you do not have access to it`,
  }),
  [GatewayErrorCode.ModelKindMismatch]: spec<{
    model: string;
    expected: 'chat' | 'completion' | 'embeddings' | 'transcription' | 'image' | 'moderation';
  }>({
    ...BAD_REQUEST,
    ...MODEL_PARAM,
    code: 'model_not_supported',
    message: (p) => `${p.model} is not ${/^[aeiou]/.test(p.expected) ? 'an' : 'a'} ${p.expected} model`,
  }),
  [GatewayErrorCode.TextCompletionsUnsupported]: spec<{ model: string }>({
    ...BAD_REQUEST,
    ...MODEL_PARAM,
    code: 'model_not_supported',
    message: (p) =>
      `The model ${p.model} does not support /v1/completions (its deployments speak only the chat or messages API): use /v1/chat/completions`,
  }),
  [GatewayErrorCode.ContextLengthExceeded]: spec<{ limit: number; promptTokens: number; completionTokens: number }>({
    ...BAD_REQUEST,
    code: 'context_length_exceeded',
    message: (p) =>
      `This model's maximum context length is ${p.limit} tokens. However, you requested ${p.promptTokens + p.completionTokens} tokens (${p.promptTokens} in the messages, ${p.completionTokens} in the completion). Please reduce the length of the messages or completion.`,
    param: 'messages',
  }),
  // The legacy /v1/completions wording, as OpenAI words it there.
  [GatewayErrorCode.PromptTooLong]: spec<{
    limit: number;
    requested: number;
    where: string;
    completionTokens: number;
    param: 'prompt' | 'suffix';
  }>({
    ...BAD_REQUEST,
    code: 'context_length_exceeded',
    message: (p) =>
      `This model's maximum context length is ${p.limit} tokens, however you requested ${p.requested} tokens (${p.where}; ${p.completionTokens} for the completion). Please reduce your prompt; or completion length.`,
    param: (p) => p.param,
  }),
  [GatewayErrorCode.EmbeddingInputTooLong]: spec<{ input: string; tokens: number; model: string; limit: number }>({
    ...BAD_REQUEST,
    code: 'context_length_exceeded',
    message: (p) => `${p.input} has ${p.tokens} tokens; ${p.model} accepts at most ${p.limit} per input`,
    param: 'input',
  }),

  [GatewayErrorCode.PreviousResponseNotFound]: spec<{ id: string }>({
    ...BAD_REQUEST,
    code: 'previous_response_not_found',
    message: (p) => `Previous response with id '${p.id}' not found.`,
    param: 'previous_response_id',
  }),
  [GatewayErrorCode.InputItemNotFound]: spec<{ id: string; param: string }>({
    ...BAD_REQUEST,
    code: 'invalid_value',
    message: (p) => `Item with id '${p.id}' not found.`,
    param: (p) => p.param,
  }),
  // GET/DELETE /v1/responses/{id}: unknown, expired and another key's ids answer alike (no oracle).
  [GatewayErrorCode.ResponseNotFound]: spec<{ id: string }>({
    ...NOT_FOUND,
    code: 'not_found',
    message: (p) => `Response with id '${p.id}' not found.`,
    param: 'response_id',
  }),
  [GatewayErrorCode.StoreUnavailable]: spec({
    ...UNAVAILABLE,
    code: 'store_unavailable',
    message: () => 'Stored responses cannot be read right now; retry shortly',
    retryAfterSeconds: 2,
  }),
  // A limit statement that neither answered nor failed in time (limits.repository.ts): the call is not made.
  [GatewayErrorCode.LimitsUnavailable]: spec({
    ...UNAVAILABLE,
    code: 'limits_unavailable',
    message: () => "The key's limits cannot be checked right now; retry shortly",
    retryAfterSeconds: 2,
  }),

  // `code` names the input: invalid_image, invalid_audio, invalid_file, invalid_text, invalid_prompt.
  [GatewayErrorCode.InvalidMediaInput]: spec<Validation & { param: string }>({
    ...BAD_REQUEST,
    code: (p) => `invalid_${p.param}`,
    message: (p) => p.message,
    param: (p) => p.param,
  }),
  [GatewayErrorCode.UnsupportedMediaType]: spec<Validation>({
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    message: (p) => p.message,
    param: (p) => p.param,
  }),
  // `param`: the field the image came from (vision/image-source.ts: `image`, or moderations' input.N.image_url.url).
  [GatewayErrorCode.InvalidImageUrl]: spec<{ message: string; param: string }>({
    ...BAD_REQUEST,
    code: 'invalid_image_url',
    message: (p) => p.message,
    param: (p) => p.param,
  }),
  [GatewayErrorCode.ImageUrlForbidden]: spec<{ param: string }>({
    ...BAD_REQUEST,
    code: 'image_url_forbidden',
    message: () => 'image URL points at a private, loopback or link-local address, which is not allowed',
    param: (p) => p.param,
  }),
  [GatewayErrorCode.ImageFetchFailed]: spec<{ param: string }>({
    ...BAD_REQUEST,
    code: 'image_fetch_failed',
    message: () => 'image URL could not be fetched',
    param: (p) => p.param,
  }),
  [GatewayErrorCode.ImageTooLarge]: spec<{ maxBytes: number; param: string }>({
    status: 413,
    type: 'invalid_request_error',
    code: 'image_too_large',
    message: (p) => `image is larger than ${p.maxBytes} bytes`,
    param: (p) => p.param,
  }),
  [GatewayErrorCode.UploadTooLarge]: spec<{ maxBytes: number; setting: string; param?: string }>({
    status: 413,
    type: 'invalid_request_error',
    code: 'upload_too_large',
    message: (p) => `the upload is larger than ${p.maxBytes} bytes in all (${p.setting})`,
    param: (p) => p.param ?? 'image',
  }),
  [GatewayErrorCode.UploadLengthRequired]: spec({
    status: 411,
    type: 'invalid_request_error',
    code: 'length_required',
    message: () => 'a multipart upload must state its Content-Length (chunked uploads are not accepted here)',
  }),
  // Multipart uploads being received or served in a replica (http/upload-admission.ts): refused before a byte is read.
  [GatewayErrorCode.UploadsInFlightForKey]: spec<{ max: number }>({
    status: 429,
    type: 'rate_limit_error',
    code: 'uploads_in_flight',
    message: (p) =>
      `Too many uploads in progress for this API key at once: at most ${p.max} in a replica (AI_UPLOADS_PER_KEY); retry when one has finished`,
    retryAfterSeconds: 1,
  }),
  [GatewayErrorCode.UploadsBusy]: spec({
    ...UNAVAILABLE,
    code: 'uploads_busy',
    message: () =>
      'The gateway holds as many uploads as it can right now (AI_UPLOAD_BYTES_IN_FLIGHT_MAX); retry shortly',
    retryAfterSeconds: 1,
  }),
  [GatewayErrorCode.UploadTooSlow]: spec<{ kibPerSecond: number }>({
    status: 408,
    type: 'invalid_request_error',
    code: 'upload_too_slow',
    message: (p) =>
      `the upload arrived too slowly: it must arrive at ${p.kibPerSecond} KiB/s at least; retry on a faster connection`,
  }),
  [GatewayErrorCode.ImageNotFound]: spec({ ...NOT_FOUND, code: 'not_found', message: () => 'No such image' }),
  // The key keeps AI_IMAGES_MAX_BYTES_PER_KEY of generated images (vision/generated-images.repository.ts): refused before
  // the upstream is called, as a spent budget is; room comes back when its oldest image is deleted (retryAfterSeconds).
  [GatewayErrorCode.ImageStorageFull]: spec<{
    max: number;
    used: number;
    requested: number;
    retentionHours: number;
    retryAfterSeconds?: number;
  }>({
    status: 429,
    type: 'insufficient_quota',
    code: 'insufficient_quota',
    message: (p) =>
      `You exceeded your current quota: this API key keeps ${p.used} bytes of generated images and this request may add up to ${p.requested}, past its limit of ${p.max} bytes. ` +
      `Images are deleted ${p.retentionHours} hours after they are generated; b64_json answers are not stored.`,
    retryAfterSeconds: (p) => p.retryAfterSeconds as number,
    retryable: false,
  }),
  // Public downloads of /cdn/images served at once by a replica (libs/storage/src/download-slots.ts).
  [GatewayErrorCode.DownloadsFromNetwork]: spec<{ max: number }>({
    status: 429,
    type: 'rate_limit_error',
    code: 'downloads_in_flight',
    message: (p) =>
      `Too many downloads from your network in progress at once: at most ${p.max} (DOWNLOADS_PER_NETWORK); retry when one has finished`,
    retryAfterSeconds: 1,
  }),
  [GatewayErrorCode.DownloadsBusy]: spec({
    ...UNAVAILABLE,
    code: 'downloads_busy',
    message: () =>
      'The gateway is serving as many downloads as it can right now (DOWNLOADS_IN_FLIGHT_MAX); retry shortly',
    retryAfterSeconds: 1,
  }),

  [GatewayErrorCode.ApiKeyMissing]: spec({
    ...UNAUTHORIZED,
    message: () => "You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.",
  }),
  [GatewayErrorCode.ApiKeyIncorrect]: spec<{ redacted: string }>({
    ...UNAUTHORIZED,
    message: (p) => `Incorrect API key provided: ${p.redacted}`,
  }),
  [GatewayErrorCode.ApiKeyRevoked]: spec({ ...UNAUTHORIZED, message: () => 'This API key has been revoked' }),
  [GatewayErrorCode.ApiKeyExpired]: spec({ ...UNAUTHORIZED, message: () => 'This API key has expired' }),
  [GatewayErrorCode.ApiKeyNotFound]: spec<{ id: string }>({
    ...NOT_FOUND,
    code: 'not_found',
    message: (p) => `No API key with id ${p.id}`,
    param: 'id',
  }),
  [GatewayErrorCode.ApiKeyNotRotatable]: spec<{ id: string }>({
    status: 409,
    type: 'invalid_request_error',
    code: 'key_revoked',
    message: (p) => `API key ${p.id} is revoked: issue a new key instead of rotating it`,
  }),
  [GatewayErrorCode.ProjectNotFound]: spec<{ id: string }>({
    ...NOT_FOUND,
    code: 'not_found',
    message: (p) => `No project with id ${p.id}`,
    param: 'project_id',
  }),
  [GatewayErrorCode.ProjectHasKeys]: spec<{ id: string; keys: number }>({
    status: 409,
    type: 'invalid_request_error',
    code: 'project_has_keys',
    message: (p) => `Project ${p.id} still owns ${p.keys} key(s): move or revoke them first`,
  }),
  [GatewayErrorCode.WebhookEndpointNotFound]: spec<{ id: string }>({
    ...NOT_FOUND,
    code: 'not_found',
    message: (p) => `No webhook endpoint with id ${p.id}`,
    param: 'id',
  }),
  [GatewayErrorCode.WebhookDeliveryNotFound]: spec<{ id: string }>({
    ...NOT_FOUND,
    code: 'not_found',
    message: (p) => `No delivery with id ${p.id} for this webhook endpoint`,
    param: 'delivery_id',
  }),
  [GatewayErrorCode.WebhooksNotConfigured]: spec({
    ...UNAVAILABLE,
    code: 'webhooks_not_configured',
    retryable: false,
    message: () => 'Webhooks need WEBHOOK_ENCRYPTION_SECRET in production',
  }),
  [GatewayErrorCode.ApiKeyRequired]: spec({
    ...FORBIDDEN,
    code: 'api_key_required',
    message: () => 'This endpoint needs an API key',
  }),
  [GatewayErrorCode.AdminDisabled]: spec({
    ...FORBIDDEN,
    code: 'admin_disabled',
    message: () => 'The admin API is disabled: neither ADMIN_TOKEN nor MEMBERSHIP_JWKS_URL is set',
  }),
  [GatewayErrorCode.AdminTokenInvalid]: spec({
    status: 401,
    type: 'invalid_request_error',
    code: 'invalid_admin_token',
    message: () => 'Invalid admin token',
  }),
  // Membership-issued operator tokens (keys/membership-tokens.ts): a valid token that may not do this.
  [GatewayErrorCode.AdminRoleRequired]: spec({
    ...FORBIDDEN,
    code: 'admin_role_required',
    message: () => 'This membership account has neither the admin nor the viewer role',
  }),
  [GatewayErrorCode.AdminSecondFactorRequired]: spec({
    ...FORBIDDEN,
    code: 'second_factor_required',
    message: () => 'The admin API needs a sign-in with a second factor (authenticator app, passkey or recovery code)',
  }),
  [GatewayErrorCode.AdminReadOnly]: spec({
    ...FORBIDDEN,
    code: 'admin_read_only',
    message: () => 'The viewer role may only read the admin API (GET)',
  }),
  [GatewayErrorCode.MembershipKeysUnavailable]: spec({
    ...UNAVAILABLE,
    code: 'membership_keys_unavailable',
    message: () => 'The membership key set (MEMBERSHIP_JWKS_URL) could not be fetched; retry shortly',
  }),
  [GatewayErrorCode.ScopeNotAllowed]: spec<{ scope: string }>({
    ...FORBIDDEN,
    code: 'scope_not_allowed',
    message: (p) => `This API key is not allowed to call ${p.scope} endpoints`,
  }),
  [GatewayErrorCode.ModelNotAllowed]: spec<{ model: string }>({
    ...FORBIDDEN,
    ...MODEL_PARAM,
    code: 'model_not_allowed',
    message: (p) => `This API key is not allowed to use model ${p.model}`,
  }),
  // `type: requests` is what OpenAI answers for a requests-per-minute limit.
  // Which limit refused is named in the message and in `param` (the limit's field: requests_per_minute,
  // tokens_per_minute, max_concurrent_requests); `of` says whose ('API key "demo"', 'project "web" for model m').
  [GatewayErrorCode.RateLimited]: spec<{
    of: string;
    limit: 'requests_per_minute' | 'max_concurrent_requests';
    max: number;
    retryAfterSeconds: number;
  }>({
    status: 429,
    type: 'requests',
    code: 'rate_limit_exceeded',
    param: (p) => p.limit,
    message: (p) =>
      p.limit === 'max_concurrent_requests'
        ? `Rate limit reached for ${p.of} on concurrent requests: Limit ${p.max}. Please try again when a call in flight has finished.`
        : `Rate limit reached for ${p.of} on requests per min (RPM): Limit ${p.max}. Please try again in ${p.retryAfterSeconds}s.`,
    retryAfterSeconds: (p) => p.retryAfterSeconds,
  }),
  [GatewayErrorCode.TokenRateLimited]: spec<{
    of: string;
    max: number;
    used: number;
    requested: number;
    retryAfterSeconds: number;
  }>({
    status: 429,
    type: 'tokens',
    code: 'rate_limit_exceeded',
    param: () => 'tokens_per_minute',
    message: (p) =>
      `Rate limit reached for ${p.of} on tokens per min (TPM): Limit ${p.max}, Used ${p.used}, Requested ${p.requested}. Please try again in ${p.retryAfterSeconds}s.`,
    retryAfterSeconds: (p) => p.retryAfterSeconds,
  }),
  // previous_response_id and item_reference load stored items the request did not send: their bytes per key per
  // minute are bounded (AI_RESPONSES_LOAD_BYTES_PER_MINUTE), so a 100-byte follow-up cannot replay megabytes at will.
  [GatewayErrorCode.StoredBytesRateLimited]: spec<{
    max: number;
    used: number;
    requested: number;
    retryAfterSeconds: number;
    /** The request field that named the stored response; null when its URL did (GET /v1/responses/{id}). */
    param: 'previous_response_id' | 'input' | null;
  }>({
    status: 429,
    type: 'requests',
    code: 'rate_limit_exceeded',
    param: (p) => p.param,
    message: (p) =>
      `Rate limit reached for this API key on stored input loaded per min: Limit ${p.max} bytes, Used ${p.used}, Requested ${p.requested}. Please try again in ${p.retryAfterSeconds}s.`,
    retryAfterSeconds: (p) => p.retryAfterSeconds,
  }),
  // Unmetered reads of a key's share running at once in a replica (limits/key-reads.ts), so reads cannot hold the
  // database pool between them.
  [GatewayErrorCode.ReadsInFlightForKey]: spec<{ max: number }>({
    status: 429,
    type: 'rate_limit_error',
    code: 'reads_in_flight',
    message: (p) =>
      `Too many reads in progress for this API key at once: at most ${p.max} in a replica (AI_READS_PER_KEY); retry when one has finished`,
    retryAfterSeconds: 1,
  }),
  // A call whose reservation alone is above a tokens-per-minute limit: no wait helps (x-should-retry: false).
  [GatewayErrorCode.RequestTooLarge]: spec<{ of: string; max: number; requested: number }>({
    status: 429,
    type: 'tokens',
    code: 'rate_limit_exceeded',
    param: () => 'tokens_per_minute',
    message: (p) =>
      `Request too large for ${p.of} on tokens per min (TPM): Limit ${p.max}, Requested ${p.requested}. Lower max_completion_tokens or the input.`,
    retryable: false,
  }),
  [GatewayErrorCode.InsufficientQuota]: spec({
    status: 429,
    type: 'insufficient_quota',
    code: 'insufficient_quota',
    message: () =>
      'You exceeded your current quota: the budget of this API key is spent (or too small for this request)',
    retryable: false,
  }),
  // A budget (yuan or tokens) of the current period cannot cover the call; a periodic one says when it starts again.
  [GatewayErrorCode.BudgetExhausted]: spec<{ of: string; period: string; retryAfterSeconds?: number }>({
    status: 429,
    type: 'insufficient_quota',
    code: 'insufficient_quota',
    message: (p) =>
      `You exceeded your current quota: the ${p.period} budget of ${p.of} is spent (or too small for this request)`,
    retryAfterSeconds: (p) => p.retryAfterSeconds as number,
    // Waiting for a new period is not what an SDK's retry is for (x-should-retry: false on every path).
    retryable: false,
  }),

  [GatewayErrorCode.NoProvider]: spec<{ model: string }>({
    ...UNAVAILABLE,
    ...MODEL_PARAM,
    code: 'no_provider',
    message: (p) => `No provider is available for model ${p.model}`,
    retryable: false,
  }),
  [GatewayErrorCode.ClientClosedRequest]: spec({
    ...BAD_REQUEST,
    code: 'client_closed_request',
    message: () => 'The client closed the request',
  }),
  // The caller's request was refused as invalid by the upstream: their problem, said in the upstream's words.
  [GatewayErrorCode.UpstreamRejectedRequest]: spec<{ message: string; code?: string | null; param?: string | null }>({
    ...BAD_REQUEST,
    code: (p) => p.code ?? 'upstream_rejected_request',
    message: (p) => p.message,
    param: (p) => p.param ?? null,
  }),
  // The upstream's answer to our own credentials may echo part of the provider key: not passed on.
  [GatewayErrorCode.UpstreamCredentialsRefused]: spec<{ where: string; status: number }>({
    status: 502,
    type: 'upstream_error',
    code: 'upstream_error',
    message: (p) =>
      `${capitalize(p.where)} refused the gateway's credentials (HTTP ${p.status}); check the provider key`,
    retryable: false,
  }),
  [GatewayErrorCode.UpstreamFailed]: spec<Upstream>({
    status: 502,
    type: 'upstream_error',
    code: 'upstream_error',
    message: (p) => `${capitalize(p.where)} failed: ${p.detail}`,
  }),
  [GatewayErrorCode.UpstreamTimeout]: spec<Upstream>({
    status: 504,
    type: 'timeout',
    code: 'upstream_timeout',
    message: (p) => `${capitalize(p.where)} timed out: ${p.detail}`,
  }),
  // No connection of the deployment's pool was free for the call (its key's share, or all of them, in use) within its timeout.
  [GatewayErrorCode.UpstreamBusy]: spec<Upstream>({
    ...UNAVAILABLE,
    code: 'upstream_busy',
    message: (p) => `${capitalize(p.where)} had no free connection for this call: ${p.detail}`,
    retryAfterSeconds: 1,
  }),
  [GatewayErrorCode.EmbeddingsCountMismatch]: spec<{ deployment: string; returned: number; expected: number }>({
    status: 502,
    type: 'upstream_error',
    code: 'upstream_error',
    message: (p) => `Upstream ${p.deployment} returned ${p.returned} embeddings for ${p.expected} inputs`,
  }),

  // 'key': this key's share of the engines is in use (its own concurrency); the other: every slot and the queue are full.
  [GatewayErrorCode.EngineBusyForKey]: spec<{ detail: string }>({
    status: 429,
    type: 'rate_limit_error',
    code: 'engine_busy',
    message: (p) => `Too many concurrent engine jobs for this API key: ${p.detail}`,
    retryAfterSeconds: 1,
  }),
  [GatewayErrorCode.EngineBusy]: spec<{ detail: string }>({
    ...UNAVAILABLE,
    code: 'engine_busy',
    message: (p) => `The local engines are busy: ${p.detail}`,
    retryAfterSeconds: 2,
  }),
  [GatewayErrorCode.EngineFailed]: spec<{ engine: string }>({
    ...UNAVAILABLE,
    code: 'engine_failed',
    message: (p) => `The ${p.engine} engine failed on this request; retry shortly`,
    retryAfterSeconds: 2,
  }),
  [GatewayErrorCode.EngineUnavailable]: spec<{ engine: string; reason: string }>({
    ...ENGINE_OFF,
    message: (p) => `The ${p.engine} engine is not available: ${p.reason}`,
  }),
  [GatewayErrorCode.LocalEnginesDisabled]: spec<{ feature: string }>({
    ...ENGINE_OFF,
    message: (p) => `${p.feature} is disabled (AI_LOCAL_ENGINES=false)`,
  }),
  [GatewayErrorCode.SpeechSynthesisNotInstalled]: spec({
    ...ENGINE_OFF,
    message: () =>
      'Speech synthesis is not installed: the optional package @echogarden/espeak-ng-emscripten (GPL-3.0) is missing',
  }),
  [GatewayErrorCode.SpeechLanguageUnavailable]: spec<{ language?: string }>({
    ...ENGINE_OFF,
    message: (p) =>
      `No speech-to-text engine for language ${p.language}: the local engine (PocketSphinx) knows English only; set AI_TRANSCRIBE_BASE_URL for other languages`,
  }),
  [GatewayErrorCode.SpeechToTextUnconfigured]: spec({
    ...ENGINE_OFF,
    message: () =>
      'No speech-to-text engine is configured: set AI_TRANSCRIBE_BASE_URL (an OpenAI-compatible /audio/transcriptions API) or install pocketsphinx (English only)',
  }),
  [GatewayErrorCode.ImageGenerationUnconfigured]: spec({
    ...ENGINE_OFF,
    message: () => 'Image generation has no upstream: set AI_IMAGES_BASE_URL to an OpenAI-compatible images API',
  }),

  [GatewayErrorCode.StreamConfigTimeout]: spec<{ ms: number }>({
    status: 408,
    type: 'invalid_request_error',
    code: 'config_timeout',
    message: (p) => `send {"type":"config","api_key":...} within ${p.ms} ms`,
  }),
  [GatewayErrorCode.StreamConfigExpected]: spec({
    ...BAD_REQUEST,
    code: 'config_expected',
    message: () => 'the first message must be the JSON config, not audio',
  }),
  [GatewayErrorCode.StreamConfigPending]: spec({
    ...BAD_REQUEST,
    code: 'config_pending',
    message: () => 'too much audio before {"type":"ready"}',
  }),
  [GatewayErrorCode.StreamInvalidConfig]: spec<{ message: string }>({
    ...BAD_REQUEST,
    code: 'invalid_config',
    message: (p) => p.message,
  }),
  [GatewayErrorCode.StreamApiKeyMissing]: spec({
    ...UNAUTHORIZED,
    message: () => 'api_key is required in the config message',
  }),
  [GatewayErrorCode.StreamAudioExpected]: spec({
    ...BAD_REQUEST,
    code: 'audio_expected',
    message: () => 'after the config only binary audio frames and {"type":"end"} are accepted',
  }),
  [GatewayErrorCode.StreamIdleTimeout]: spec<{ ms: number }>({
    status: 408,
    type: 'invalid_request_error',
    code: 'idle_timeout',
    message: (p) => `no message for ${p.ms} ms`,
  }),
  [GatewayErrorCode.StreamMessageTooLarge]: spec<{ maxBytes: number }>({
    status: 413,
    type: 'invalid_request_error',
    code: 'message_too_large',
    message: (p) => `messages may be at most ${p.maxBytes} bytes`,
  }),
  [GatewayErrorCode.StreamSessionLimit]: spec<{ seconds: number }>({
    ...BAD_REQUEST,
    code: 'session_limit',
    message: (p) => `a session may carry at most ${p.seconds} seconds of audio`,
  }),
  [GatewayErrorCode.StreamSessionTooLong]: spec<{ seconds: number }>({
    ...BAD_REQUEST,
    code: 'session_limit',
    message: (p) => `a session may last at most ${p.seconds} seconds (twice AI_STREAM_MAX_SECONDS)`,
  }),
  [GatewayErrorCode.StreamSegmentFailed]: spec<{ reason: string }>({
    status: 500,
    type: 'server_error',
    code: 'transcription_failed',
    message: (p) => `a segment could not be transcribed: ${p.reason}`,
  }),
  [GatewayErrorCode.ServerShutdown]: spec({
    ...UNAVAILABLE,
    code: 'server_shutdown',
    message: () => 'the server is shutting down',
  }),
} satisfies { [C in GatewayErrorCode]: GatewayErrorSpec<never> };

type Catalog = typeof GATEWAY_ERRORS;
export type GatewayErrorParams<C extends GatewayErrorCode> = Catalog[C] extends GatewayErrorSpec<infer P> ? P : never;
type ParamsArg<C extends GatewayErrorCode> = [GatewayErrorParams<C>] extends [void]
  ? []
  : [params: GatewayErrorParams<C>];

const resolve = <P, T>(v: T | ((p: P) => T), p: P): T => (typeof v === 'function' ? (v as (p: P) => T)(p) : v);

/** A catalog error: `throw new GatewayError(GatewayErrorCode.NoProvider, { model })`. */
export class GatewayError<C extends GatewayErrorCode = GatewayErrorCode> extends HttpException {
  readonly type: string;
  /** The OpenAI `code` of the body. */
  readonly errorCode: string | null;
  readonly param: string | null;
  readonly retryAfterSeconds?: number;
  /** false: answered with `x-should-retry: false`. */
  readonly retryable?: false;

  constructor(
    readonly code: C,
    ...[params]: ParamsArg<C>
  ) {
    const entry = GATEWAY_ERRORS[code] as GatewayErrorSpec<unknown>;
    const message = entry.message(params);
    const errorCode = resolve(entry.code, params);
    const param = entry.param === undefined ? null : resolve(entry.param, params);
    const retryAfterSeconds =
      entry.retryAfterSeconds === undefined ? undefined : resolve(entry.retryAfterSeconds, params);
    super(
      { message, type: entry.type, errorCode: errorCode ?? undefined, param: param ?? undefined, retryAfterSeconds },
      entry.status,
    );
    this.type = entry.type;
    this.errorCode = errorCode;
    this.param = param;
    this.retryAfterSeconds = retryAfterSeconds;
    this.retryable = entry.retryable;
  }
}

import { IsInt } from 'class-validator';
import { GATEWAY_ERRORS, GatewayError, GatewayErrorCode } from './gateway-errors';
import { openAiErrorBody, shouldRetryError } from './openai-error';
import { openAiValidationPipe } from './openai-validation.pipe';

/** OpenAI `code` strings several catalog entries answer with on purpose (same meaning, different wording or status). */
const SHARED_CODES: Record<string, GatewayErrorCode[]> = {
  invalid_value: [
    GatewayErrorCode.InvalidValue,
    GatewayErrorCode.DimensionsTooLarge,
    GatewayErrorCode.DateInvalid,
    GatewayErrorCode.DateRangeReversed,
    GatewayErrorCode.DateRangeTooLong,
    GatewayErrorCode.InputItemNotFound,
  ],
  unsupported_parameter: [
    GatewayErrorCode.UnsupportedParameter,
    GatewayErrorCode.ConversationNotStored,
    GatewayErrorCode.WordTimestampsUnavailable,
    GatewayErrorCode.ImageParameterUnsupported,
  ],
  model_not_found: [GatewayErrorCode.ModelNotFound, GatewayErrorCode.ModelNotVisible],
  model_not_supported: [GatewayErrorCode.ModelKindMismatch, GatewayErrorCode.TextCompletionsUnsupported],
  context_length_exceeded: [
    GatewayErrorCode.ContextLengthExceeded,
    GatewayErrorCode.PromptTooLong,
    GatewayErrorCode.EmbeddingInputTooLong,
  ],
  not_found: [
    GatewayErrorCode.ImageNotFound,
    GatewayErrorCode.ApiKeyNotFound,
    GatewayErrorCode.ResponseNotFound,
    GatewayErrorCode.ProjectNotFound,
    GatewayErrorCode.WebhookEndpointNotFound,
    GatewayErrorCode.WebhookDeliveryNotFound,
  ],
  rate_limit_exceeded: [
    GatewayErrorCode.RateLimited,
    GatewayErrorCode.TokenRateLimited,
    GatewayErrorCode.RequestTooLarge,
    GatewayErrorCode.StoredBytesRateLimited,
  ],
  insufficient_quota: [
    GatewayErrorCode.InsufficientQuota,
    GatewayErrorCode.BudgetExhausted,
    GatewayErrorCode.ImageStorageFull,
  ],
  invalid_api_key: [
    GatewayErrorCode.ApiKeyMissing,
    GatewayErrorCode.ApiKeyIncorrect,
    GatewayErrorCode.ApiKeyRevoked,
    GatewayErrorCode.ApiKeyExpired,
    GatewayErrorCode.StreamApiKeyMissing,
  ],
  upstream_error: [
    GatewayErrorCode.UpstreamCredentialsRefused,
    GatewayErrorCode.UpstreamFailed,
    GatewayErrorCode.EmbeddingsCountMismatch,
  ],
  engine_busy: [GatewayErrorCode.EngineBusyForKey, GatewayErrorCode.EngineBusy],
  session_limit: [GatewayErrorCode.StreamSessionLimit, GatewayErrorCode.StreamSessionTooLong],
  engine_unavailable: [
    GatewayErrorCode.EngineUnavailable,
    GatewayErrorCode.LocalEnginesDisabled,
    GatewayErrorCode.SpeechSynthesisNotInstalled,
    GatewayErrorCode.SpeechLanguageUnavailable,
    GatewayErrorCode.SpeechToTextUnconfigured,
    GatewayErrorCode.ImageGenerationUnconfigured,
  ],
};
/** Entries whose `code` is taken from the failure itself. */
const DERIVED_CODES = [GatewayErrorCode.InvalidMediaInput, GatewayErrorCode.UpstreamRejectedRequest];

const body = (e: unknown) => openAiErrorBody(e);

describe('gateway error catalog', () => {
  const codes = Object.values(GatewayErrorCode);

  it('gives every code an entry with a 4xx/5xx status, an OpenAI type and a message', () => {
    expect(Object.keys(GATEWAY_ERRORS).sort()).toEqual([...codes].sort());
    for (const code of codes) {
      const entry = GATEWAY_ERRORS[code];
      expect({ code, ok: entry.status >= 400 && entry.status <= 599 }).toEqual({ code, ok: true });
      expect({ code, type: typeof entry.type === 'string' && entry.type.length > 0 }).toEqual({ code, type: true });
      expect(typeof entry.message).toBe('function');
    }
  });

  it('shares an OpenAI code string between entries only where listed', () => {
    const byString = new Map<string, GatewayErrorCode[]>();
    for (const code of codes) {
      const value = GATEWAY_ERRORS[code].code;
      if (typeof value === 'function') {
        expect(DERIVED_CODES).toContain(code);
        continue;
      }
      expect({ code, value: typeof value === 'string' && value.length > 0 }).toEqual({ code, value: true });
      byString.set(value as string, [...(byString.get(value as string) ?? []), code]);
    }
    const shared = Object.fromEntries(
      [...byString].filter(([, list]) => list.length > 1).map(([s, list]) => [s, [...list].sort()]),
    );
    expect(shared).toEqual(Object.fromEntries(Object.entries(SHARED_CODES).map(([s, list]) => [s, [...list].sort()])));
  });

  it('answers a catalog error in the OpenAI shape, status and retry hints from the catalog', () => {
    expect(body(new GatewayError(GatewayErrorCode.NoProvider, { model: 'm' }))).toEqual({
      status: 503,
      retryAfterSeconds: undefined,
      body: {
        error: {
          message: 'No provider is available for model m',
          type: 'service_unavailable',
          code: 'no_provider',
          param: 'model',
        },
      },
    });
    expect(shouldRetryError(new GatewayError(GatewayErrorCode.NoProvider, { model: 'm' }))).toBe(false);
    expect(
      shouldRetryError(new GatewayError(GatewayErrorCode.UpstreamFailed, { where: 'upstream', detail: 'x' })),
    ).toBeUndefined();

    const limited = body(
      new GatewayError(GatewayErrorCode.RateLimited, {
        of: 'API key "demo"',
        limit: 'requests_per_minute',
        max: 5,
        retryAfterSeconds: 7,
      }),
    );
    expect(limited).toMatchObject({
      status: 429,
      retryAfterSeconds: 7,
      body: { error: { type: 'requests', code: 'rate_limit_exceeded', param: 'requests_per_minute' } },
    });
    expect(body(new GatewayError(GatewayErrorCode.StoreUnavailable))).toMatchObject({
      status: 503,
      retryAfterSeconds: 2,
      body: { error: { code: 'store_unavailable' } },
    });
    expect(body(new GatewayError(GatewayErrorCode.LimitsUnavailable))).toMatchObject({
      status: 503,
      retryAfterSeconds: 2,
      body: { error: { code: 'limits_unavailable' } },
    });
    expect(body(new GatewayError(GatewayErrorCode.ApiKeyMissing))).toMatchObject({
      status: 401,
      body: { error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
    });
  });

  it('takes derived codes and params from the failure', () => {
    expect(
      body(new GatewayError(GatewayErrorCode.InvalidMediaInput, { message: 'bad', param: 'audio' })).body.error,
    ).toEqual({ message: 'bad', type: 'invalid_request_error', code: 'invalid_audio', param: 'audio' });
    expect(
      body(
        new GatewayError(GatewayErrorCode.UpstreamRejectedRequest, {
          message: 'too many images',
          code: 'invalid_value',
          param: 'messages',
        }),
      ).body.error,
    ).toEqual({
      message: 'too many images',
      type: 'invalid_request_error',
      code: 'invalid_value',
      param: 'messages',
    });
    expect(
      body(new GatewayError(GatewayErrorCode.UpstreamRejectedRequest, { message: 'no', code: null })).body.error,
    ).toMatchObject({ code: 'upstream_rejected_request', param: null });
    expect(new GatewayError(GatewayErrorCode.ModelKindMismatch, { model: 'e', expected: 'embeddings' }).message).toBe(
      'e is not an embeddings model',
    );
    expect(new GatewayError(GatewayErrorCode.ModelKindMismatch, { model: 'c', expected: 'chat' }).message).toBe(
      'c is not a chat model',
    );
  });

  it('is what the OpenAI validation pipe raises', async () => {
    class Body {
      @IsInt() n: number;
    }
    const refused = await openAiValidationPipe()
      .transform({ n: 'x' }, { type: 'body', metatype: Body })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GatewayError);
    expect(body(refused)).toMatchObject({
      status: 400,
      body: { error: { type: 'invalid_request_error', code: 'invalid_value', param: 'n' } },
    });
  });
});

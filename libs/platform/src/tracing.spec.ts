import { redactedUrl, SENSITIVE_QUERY_PARAMS, startTracing, tracesEndpoint, isUntracedPath } from './tracing';

describe('tracing configuration', () => {
  it('is off unless an OTLP endpoint is configured', () => {
    expect(tracesEndpoint({})).toBeNull();
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeNull();
    expect(startTracing('membership', {})).toBeNull();
  });

  it('appends the traces path to the base endpoint, and takes a per-signal endpoint as is', () => {
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318/' })).toBe(
      'http://otel-collector:4318/v1/traces',
    );
    expect(
      tracesEndpoint({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom',
      }),
    ).toBe('http://b:4318/custom');
  });

  it('honours OTEL_SDK_DISABLED', () => {
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'TRUE' })).toBeNull();
  });

  it('refuses a malformed endpoint with a clear message', () => {
    expect(() => startTracing('membership', { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT is not a valid URL/,
    );
  });

  it('skips probes and scrapes only', () => {
    for (const p of [
      '/actuator/health',
      '/actuator/health/liveness',
      '/actuator/health/readiness',
      '/actuator/prometheus',
      '/api/actuator/health',
    ]) {
      expect(isUntracedPath(p)).toBe(true);
    }
    for (const p of ['/api/v1/app/auth/login', '/actuator/healthz', '/v1/chat/completions'])
      expect(isUntracedPath(p)).toBe(false);
  });

  it('redacts OAuth codes, states and keys', () => {
    expect(SENSITIVE_QUERY_PARAMS).toEqual(
      expect.arrayContaining(['code', 'state', 'api_key', 'ticket', 'echostr', 'secret', 'client_secret']),
    );
  });

  it('redacts sensitive query values and URL passwords of outgoing calls, keeping the rest', () => {
    const url = redactedUrl(
      'https://u:pw@api.weixin.qq.com/sns/oauth2/access_token?appid=wx1&secret=s3&code=c0de&grant_type=authorization_code',
    )!;
    expect(url.href).toBe(
      'https://u:REDACTED@api.weixin.qq.com/sns/oauth2/access_token?appid=wx1&secret=REDACTED&code=REDACTED&grant_type=authorization_code',
    );
    expect(redactedUrl('https://dysmsapi.aliyuncs.com/?AccessKeyId=AK&Signature=x%2By&Action=SendSms')!.search).toBe(
      '?AccessKeyId=REDACTED&Signature=REDACTED&Action=SendSms',
    );
    expect(redactedUrl('not a url')).toBeNull();
  });
});

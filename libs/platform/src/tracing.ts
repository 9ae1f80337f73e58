// OpenTelemetry tracing, off by default. Call startTracing() first thing in main.ts, before Nest,
// TypeORM or pg are required: instrumentation patches modules as they load.
//
// On when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set and
// OTEL_SDK_DISABLED is not "true". Spans go out over OTLP/HTTP (JSON) to
// `${OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`. Instrumented: incoming and outgoing node:http(s),
// pg queries, and undici/fetch upstream calls. Probe and scrape paths are not traced.
// The SDK packages are required lazily, so an app with tracing off does not load them.
import { resolve } from 'path';
import { loggedPath } from './logging/logged-path';
import { withoutTrailingSlashes } from './net/urls';

export interface TracingHandle {
  readonly serviceName: string;
  readonly endpoint: string;
  /** Sends buffered spans now. */
  flush(): Promise<void>;
  /** Flushes, then stops exporting and removes the instrumentation. */
  shutdown(): Promise<void>;
}

/** Query parameters whose values are replaced by REDACTED in span URLs (OAuth codes, states, keys...). */
export const SENSITIVE_QUERY_PARAMS = [
  'code',
  'js_code',
  'state',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'api_key',
  'key',
  'password',
  'secret',
  'appsecret',
  'client_secret',
  'ticket',
  'signature',
  'msg_signature',
  'echostr',
  'nonce',
  'openid',
  'sig',
  'Signature',
  'SignatureNonce',
  'AccessKeyId',
  'AWSAccessKeyId',
  'X-Amz-Signature',
  'X-Amz-Credential',
  'X-Amz-Security-Token',
  'X-Goog-Signature',
];

/**
 * Incoming paths that are never traced: Kubernetes probes and Prometheus scrapes (under any context
 * path). String checks, not a regex: a suffix regex with `.*` is tried at every start position of a
 * caller's path (polynomial).
 */
export function isUntracedPath(path: string): boolean {
  return (
    path.endsWith('/actuator/health') || path.endsWith('/actuator/prometheus') || path.includes('/actuator/health/')
  );
}

let active: TracingHandle | null = null;

/** Where spans would be sent for this environment, or null when tracing is off. */
export function tracesEndpoint(env: NodeJS.ProcessEnv = process.env): string | null {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return null;
  const signal = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (signal) return signal;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return null;
  return otlpSignalUrl(base, 'traces');
}

/** `${base}/v1/${signal}` with the base's trailing slashes dropped. */
export function otlpSignalUrl(base: string, signal: 'traces' | 'metrics'): string {
  return `${withoutTrailingSlashes(base)}/v1/${signal}`;
}

/** The OpenTelemetry service name: OTEL_SERVICE_NAME when set, else the app's own name. */
export function otelServiceName(fallback: string, env: NodeJS.ProcessEnv = process.env): string {
  return env.OTEL_SERVICE_NAME?.trim() || fallback;
}

/**
 * Starts tracing for `serviceName` when an OTLP endpoint is configured; returns null (and loads
 * nothing) otherwise. Calling it again returns the running instance.
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): TracingHandle | null {
  if (active) return active;
  const endpoint = tracesEndpoint(env);
  if (!endpoint) return null;
  try {
    new URL(endpoint);
  } catch {
    throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT is not a valid URL: ${JSON.stringify(endpoint)}`);
  }

  const { NodeTracerProvider, BatchSpanProcessor } = sdk<typeof import('@opentelemetry/sdk-trace-node')>(
    '@opentelemetry/sdk-trace-node',
  );
  const { OTLPTraceExporter } = sdk<typeof import('@opentelemetry/exporter-trace-otlp-http')>(
    '@opentelemetry/exporter-trace-otlp-http',
  );
  const { resourceFromAttributes } = sdk<typeof import('@opentelemetry/resources')>('@opentelemetry/resources');
  const { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } = sdk<typeof import('@opentelemetry/semantic-conventions')>(
    '@opentelemetry/semantic-conventions',
  );
  const { registerInstrumentations } = sdk<typeof import('@opentelemetry/instrumentation')>(
    '@opentelemetry/instrumentation',
  );
  const { HttpInstrumentation } = sdk<typeof import('@opentelemetry/instrumentation-http')>(
    '@opentelemetry/instrumentation-http',
  );
  const { PgInstrumentation } = sdk<typeof import('@opentelemetry/instrumentation-pg')>(
    '@opentelemetry/instrumentation-pg',
  );
  const { UndiciInstrumentation } = sdk<typeof import('@opentelemetry/instrumentation-undici')>(
    '@opentelemetry/instrumentation-undici',
  );

  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: otelServiceName(serviceName, env),
      [ATTR_SERVICE_VERSION]: packageVersion(),
      'deployment.environment.name': env.NODE_ENV || 'development',
    }),
    // Exporter and batch settings also honour the standard OTEL_EXPORTER_OTLP_* / OTEL_BSP_* variables.
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint }))],
  });
  provider.register();

  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => isUntracedPath((req.url ?? '').split('?')[0]),
        // A QR login state or WeChat scene in the path is redacted as in the access log (see loggedPath).
        startIncomingSpanHook: (req) => {
          const path = ('url' in req ? String(req.url ?? '') : '').split('?', 1)[0];
          const safe = loggedPath(path);
          return safe === path ? {} : { 'url.path': safe };
        },
        redactedQueryParams: SENSITIVE_QUERY_PARAMS,
        redactedQueryParamsServer: SENSITIVE_QUERY_PARAMS,
        headersToSpanAttributes: { server: { requestHeaders: ['x-request-id'] } },
      }),
      new PgInstrumentation({ enhancedDatabaseReporting: false }),
      // Unlike the http instrumentation, undici records the query string as is: redact it here.
      new UndiciInstrumentation({
        startSpanHook: (request) => {
          const url = redactedUrl(`${request.origin}${request.path}`);
          return url ? { 'url.full': url.href, 'url.query': url.search } : {};
        },
      }),
    ],
  });

  const handle: TracingHandle = {
    serviceName,
    endpoint,
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      if (active === handle) active = null;
      unregister();
      await provider.shutdown();
    },
  };
  active = handle;
  return handle;
}

/** Flushes and stops the running tracer, if any (call after the app has closed). */
export async function shutdownTracing(): Promise<void> {
  if (active) await active.shutdown();
}

/** The URL with the values of SENSITIVE_QUERY_PARAMS replaced by REDACTED (null when unparsable). */
export function redactedUrl(raw: string): URL | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  for (const name of SENSITIVE_QUERY_PARAMS) if (url.searchParams.has(name)) url.searchParams.set(name, 'REDACTED');
  if (url.password) url.password = 'REDACTED';
  return url;
}

/** An SDK package, required only once tracing is on (see the top of this file). */
function sdk<T>(id: string): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy on purpose: an app with tracing off never loads the SDK
  return require(id) as T;
}

function packageVersion(): string {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the app's package.json at run time, outside the compiled tree
    return (require(resolve(process.cwd(), 'package.json')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

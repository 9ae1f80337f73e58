// OTLP/HTTP (JSON) export of metrics beside the Prometheus endpoint, on when a metrics endpoint is
// configured. Like tracing (../tracing.ts) the SDK packages are required only then: an app without
// it never loads @opentelemetry/sdk-metrics.
import type { Meter } from '@opentelemetry/api';
import { otlpSignalUrl } from '../tracing';

export interface OtlpMetricsSettings {
  /** Full URL metrics are posted to (…/v1/metrics). */
  endpoint: string;
  /** Export interval (OTEL_METRIC_EXPORT_INTERVAL), ms. */
  intervalMs: number;
  serviceName: string;
}

export interface OtlpMetrics {
  readonly meter: Meter;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Where metrics go, or null: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT as is, else
 * `${OTEL_EXPORTER_OTLP_ENDPOINT}/v1/metrics`; none when OTEL_SDK_DISABLED (as for traces).
 */
export function metricsEndpoint(settings: {
  OTEL_SDK_DISABLED?: boolean;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?: string;
}): string | null {
  if (settings.OTEL_SDK_DISABLED) return null;
  const signal = settings.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?.trim();
  if (signal) return signal;
  const base = settings.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? otlpSignalUrl(base, 'metrics') : null;
}

/**
 * A meter provider of its own (not the global one: tests run several apps in one process), exporting
 * periodically over OTLP, or to `exporter` when given (tests: an InMemoryMetricExporter).
 */
export function startOtlpMetrics(
  settings: OtlpMetricsSettings,
  exporter?: import('@opentelemetry/sdk-metrics').PushMetricExporter,
): OtlpMetrics {
  const { MeterProvider, PeriodicExportingMetricReader } =
    sdk<typeof import('@opentelemetry/sdk-metrics')>('@opentelemetry/sdk-metrics');
  const { resourceFromAttributes } = sdk<typeof import('@opentelemetry/resources')>('@opentelemetry/resources');
  const otlp = () =>
    new (sdk<typeof import('@opentelemetry/exporter-metrics-otlp-http')>(
      '@opentelemetry/exporter-metrics-otlp-http',
    ).OTLPMetricExporter)({ url: settings.endpoint });
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    readers: [
      new PeriodicExportingMetricReader({
        exporter: exporter ?? otlp(),
        exportIntervalMillis: settings.intervalMs,
        exportTimeoutMillis: Math.min(30_000, settings.intervalMs),
      }),
    ],
  });
  return {
    meter: provider.getMeter('@app/platform'),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

function sdk<T>(id: string): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy on purpose: without an endpoint the SDK is never loaded
  return require(id) as T;
}

// The AI gateway's GenAI metrics: the OpenTelemetry GenAI client metrics of its upstream calls
// (libs/llm/src/genai-telemetry.ts records them), time to first chunk, the gateway's own time per
// request and what calls cost. Always in the app's Prometheus registry (/actuator/prometheus, names
// as OpenTelemetry's Prometheus exporter spells them: dots become underscores, seconds get `_seconds`);
// also over OTLP when a metrics endpoint is configured (otlp-metrics.ts, loaded only then).
import type { Attributes, Counter as OtelCounter, Histogram as OtelHistogram } from '@opentelemetry/api';
import type { Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram } from './series-metrics';
import { OtlpMetrics, OtlpMetricsSettings, startOtlpMetrics } from './otlp-metrics';

/** The convention's ExplicitBucketBoundaries for gen_ai.client.token.usage. */
export const GEN_AI_TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
/** The convention's ExplicitBucketBoundaries for gen_ai.client.operation.duration and time to first chunk (seconds). */
export const GEN_AI_DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/** The gateway's own time per request is sub-millisecond to milliseconds (npm run bench): finer buckets. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

/** OpenTelemetry attributes a GenAI point may carry, and the Prometheus label each becomes. */
const CLIENT_ATTRIBUTES = [
  'gen_ai.operation.name',
  'gen_ai.provider.name',
  'gen_ai.request.model',
  'gen_ai.response.model',
  'server.address',
  'server.port',
  'error.type',
] as const;
const label = (attribute: string) => attribute.replace(/\./g, '_');
const CLIENT_LABELS = CLIENT_ATTRIBUTES.map(label);

export interface GenAiMetricsOptions {
  /** OTLP export of the same metrics; absent: Prometheus only. */
  otlp?: OtlpMetricsSettings;
  /** Replaces the OTLP exporter (tests). */
  exporter?: import('@opentelemetry/sdk-metrics').PushMetricExporter;
}

/** One instance per app (its Prometheus registry); implements libs/llm's GenAiMetricsSink. */
export class GenAiMetrics {
  // Series types (series-metrics.ts): several observations on every proxied call, exposed as prom-client's.
  private readonly tokens: SeriesHistogram;
  private readonly duration: SeriesHistogram;
  private readonly firstChunk: SeriesHistogram;
  private readonly overhead: SeriesHistogram;
  private readonly cost: SeriesCounter;
  private readonly otlp: OtlpMetrics | null;
  private readonly otel?: {
    tokens: OtelHistogram;
    duration: OtelHistogram;
    firstChunk: OtelHistogram;
    overhead: OtelHistogram;
    cost: OtelCounter;
  };

  constructor(registry: Registry, opts: GenAiMetricsOptions = {}) {
    const registers = [registry];
    this.tokens = new SeriesHistogram({
      name: 'gen_ai_client_token_usage',
      help: 'Number of input and output tokens used (OpenTelemetry gen_ai.client.token.usage)',
      labelNames: [...CLIENT_LABELS, 'gen_ai_token_type'],
      buckets: GEN_AI_TOKEN_BUCKETS,
      registers,
    });
    this.duration = new SeriesHistogram({
      name: 'gen_ai_client_operation_duration_seconds',
      help: 'GenAI operation duration per upstream attempt (OpenTelemetry gen_ai.client.operation.duration)',
      labelNames: CLIENT_LABELS,
      buckets: GEN_AI_DURATION_BUCKETS,
      registers,
    });
    this.firstChunk = new SeriesHistogram({
      name: 'gen_ai_client_operation_time_to_first_chunk_seconds',
      help: 'Time to the first chunk of a streamed upstream answer (OpenTelemetry gen_ai.client.operation.time_to_first_chunk)',
      labelNames: CLIENT_LABELS,
      buckets: GEN_AI_DURATION_BUCKETS,
      registers,
    });
    this.overhead = new SeriesHistogram({
      name: 'ai_gateway_overhead_seconds',
      help: "The gateway's own time per /v1 request, upstream waits excluded (X-Gateway-Overhead-Ms)",
      labelNames: ['endpoint'],
      buckets: OVERHEAD_BUCKETS,
      registers,
    });
    this.cost = new SeriesCounter({
      name: 'ai_gateway_cost_yuan_total',
      help: 'Yuan charged for calls, by public model, deployment and endpoint',
      labelNames: ['model', 'deployment', 'endpoint'],
      registers,
    });
    this.otlp = opts.otlp ? startOtlpMetrics(opts.otlp, opts.exporter) : null;
    if (this.otlp) {
      const meter = this.otlp.meter;
      this.otel = {
        tokens: meter.createHistogram('gen_ai.client.token.usage', {
          unit: '{token}',
          description: 'Number of input and output tokens used.',
          advice: { explicitBucketBoundaries: GEN_AI_TOKEN_BUCKETS },
        }),
        duration: meter.createHistogram('gen_ai.client.operation.duration', {
          unit: 's',
          description: 'GenAI operation duration.',
          advice: { explicitBucketBoundaries: GEN_AI_DURATION_BUCKETS },
        }),
        firstChunk: meter.createHistogram('gen_ai.client.operation.time_to_first_chunk', {
          unit: 's',
          description: 'Time to receive the first chunk of a streamed answer.',
          advice: { explicitBucketBoundaries: GEN_AI_DURATION_BUCKETS },
        }),
        overhead: meter.createHistogram('ai_gateway.overhead', {
          unit: 's',
          description: "The gateway's own time per request, upstream waits excluded.",
          advice: { explicitBucketBoundaries: OVERHEAD_BUCKETS },
        }),
        cost: meter.createCounter('ai_gateway.cost', { unit: '{yuan}', description: 'Yuan charged for calls.' }),
      };
    }
  }

  operationDuration(attributes: Attributes, seconds: number): void {
    this.duration.observe(labels(attributes), seconds);
    this.otel?.duration.record(seconds, attributes);
  }

  tokenUsage(attributes: Attributes, type: 'input' | 'output', tokens: number): void {
    const l = labels(attributes);
    l.gen_ai_token_type = type;
    this.tokens.observe(l, tokens);
    this.otel?.tokens.record(tokens, { ...attributes, 'gen_ai.token.type': type });
  }

  timeToFirstChunk(attributes: Attributes, seconds: number): void {
    this.firstChunk.observe(labels(attributes), seconds);
    this.otel?.firstChunk.record(seconds, attributes);
  }

  /** The gateway's own time for one /v1 request (`endpoint`: a fixed route name, never a caller's path). */
  gatewayOverhead(endpoint: string, seconds: number): void {
    this.overhead.observe({ endpoint }, seconds);
    this.otel?.overhead.record(seconds, { 'ai_gateway.endpoint': endpoint });
  }

  /** Yuan charged for one call (public model and deployment names come from the providers file). */
  charged(model: string, deployment: string | null | undefined, endpoint: string, yuan: number): void {
    if (!(yuan > 0)) return;
    this.cost.inc({ model, deployment: deployment ?? '', endpoint }, yuan);
    this.otel?.cost.add(yuan, {
      'ai_gateway.model': model,
      'ai_gateway.deployment': deployment ?? '',
      'ai_gateway.endpoint': endpoint,
    });
  }

  /** Sends what OTLP export holds now (tests, shutdown). */
  async flush(): Promise<void> {
    await this.otlp?.flush();
  }

  async shutdown(): Promise<void> {
    await this.otlp?.shutdown();
  }
}

/** Prometheus labels of the attributes present (absent ones stay absent, as OpenTelemetry's exporter does). */
function labels(attributes: Attributes): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (let i = 0; i < CLIENT_ATTRIBUTES.length; i++) {
    const v = attributes[CLIENT_ATTRIBUTES[i]];
    if (typeof v === 'string' || typeof v === 'number') out[CLIENT_LABELS[i]] = v;
  }
  return out;
}

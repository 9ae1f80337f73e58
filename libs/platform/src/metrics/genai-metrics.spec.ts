import { AggregationTemporality, DataPointType, InMemoryMetricExporter } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import { GEN_AI_DURATION_BUCKETS, GEN_AI_TOKEN_BUCKETS, GenAiMetrics } from './genai-metrics';
import { metricsEndpoint } from './otlp-metrics';

describe('GenAiMetrics over OTLP', () => {
  const attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'gpt-4o',
    'gen_ai.response.model': 'gpt-4o-2024',
    'server.address': 'api.openai.com',
    'server.port': 443,
  };

  it('records the same points under the OpenTelemetry names, units and the convention bucket boundaries', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const metrics = new GenAiMetrics(new Registry(), {
      otlp: { endpoint: 'http://127.0.0.1:1/v1/metrics', intervalMs: 3_600_000, serviceName: 'ai-gateway' },
      exporter,
    });
    metrics.tokenUsage(attributes, 'input', 12);
    metrics.tokenUsage(attributes, 'output', 30);
    metrics.operationDuration(attributes, 0.5);
    metrics.operationDuration({ ...attributes, 'error.type': '500' }, 0.05);
    metrics.timeToFirstChunk(attributes, 0.1);
    metrics.charged('vendor-gpt-4', 'primary', 'chat.completions', 0.25);
    await metrics.flush();
    const all = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const named = (name: string) => all.filter((m) => m.descriptor.name === name).at(-1)!;

    const tokens = named('gen_ai.client.token.usage');
    expect(tokens.descriptor.unit).toBe('{token}');
    expect(tokens.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(tokens.dataPoints.map((p) => [p.attributes, (p.value as { sum: number }).sum])).toEqual([
      [{ ...attributes, 'gen_ai.token.type': 'input' }, 12],
      [{ ...attributes, 'gen_ai.token.type': 'output' }, 30],
    ]);
    expect((tokens.dataPoints[0].value as { buckets: { boundaries: number[] } }).buckets.boundaries).toEqual(
      GEN_AI_TOKEN_BUCKETS,
    );

    const duration = named('gen_ai.client.operation.duration');
    expect(duration.descriptor.unit).toBe('s');
    expect(duration.dataPoints.map((p) => p.attributes['error.type'])).toEqual([undefined, '500']);
    expect((duration.dataPoints[0].value as { buckets: { boundaries: number[] } }).buckets.boundaries).toEqual(
      GEN_AI_DURATION_BUCKETS,
    );
    expect(named('gen_ai.client.operation.time_to_first_chunk').dataPoints).toHaveLength(1);
    expect(named('ai_gateway.cost').dataPoints.map((p) => [p.attributes, p.value])).toEqual([
      [
        {
          'ai_gateway.model': 'vendor-gpt-4',
          'ai_gateway.deployment': 'primary',
          'ai_gateway.endpoint': 'chat.completions',
        },
        0.25,
      ],
    ]);
    await metrics.shutdown();
  });

  it('exports only when an endpoint is configured, and never with OTEL_SDK_DISABLED', () => {
    expect(metricsEndpoint({})).toBeNull();
    expect(metricsEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toBe('http://c:4318/v1/metrics');
    expect(
      metricsEndpoint({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://m:4318/x',
      }),
    ).toBe('http://m:4318/x');
    expect(metricsEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: true })).toBeNull();
  });
});

// OpenTelemetry GenAI spans and metrics of upstream calls (libs/llm/src/genai-telemetry.ts,
// libs/platform/src/metrics/genai-metrics.ts): the real gateway over HTTP against the fake upstreams,
// spans caught by an InMemorySpanExporter (with the HTTP instrumentation, so the incoming request's
// SERVER span is there to parent the attempts), metrics read from /actuator/prometheus. The OTLP side
// of the metrics: libs/platform/src/metrics/genai-metrics.spec.ts (Jest cannot run the OTLP exporter's
// dynamic import).
import { SpanKind } from '@opentelemetry/api';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import OpenAI from 'openai';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
const httpInstrumentation = new HttpInstrumentation();
const unregister = registerInstrumentations({
  tracerProvider: provider,
  instrumentations: [httpInstrumentation, new UndiciInstrumentation()],
});
// Jest loads core modules outside the require hook the instrumentation listens on: `http` (one module
// object for the whole process, so for the app too) is patched here, as the hook would on its load.
for (const def of (
  httpInstrumentation as unknown as { getModuleDefinitions(): Array<{ name: string; patch?: (m: unknown) => unknown }> }
).getModuleDefinitions()) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the module object the app's servers use
  if (def.name === 'http') def.patch?.(require('http'));
}

/** Prometheus text as `name{labels}` -> value (labels as the registry prints them). */
async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/actuator/prometheus`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    const m = /^([^{]+)\{(.*)\}$/.exec(line.slice(0, at));
    out.set(
      m
        ? `${m[1]}{${m[2]
            .split(/,(?=[a-z_]+=")/)
            .sort()
            .join(',')}}`
        : line.slice(0, at),
      Number(line.slice(at + 1)),
    );
  }
  return out;
}
const series = (name: string, labels: Record<string, string | number>) =>
  `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',')}}`;

const genAiSpans = () => exporter.getFinishedSpans().filter((s) => s.attributes['gen_ai.operation.name'] !== undefined);
const serverSpan = (s: ReadableSpan) =>
  exporter.getFinishedSpans().find((p) => p.spanContext().spanId === s.parentSpanContext?.spanId);

afterAll(async () => {
  unregister();
  await provider.shutdown();
});

describe('GenAI telemetry: spans and metrics of upstream calls', () => {
  let f: GatewayFixture;
  let client: OpenAI;
  let key: string;
  let upstreamPort: number;

  beforeAll(async () => {
    f = await startGatewayFixture({}, ({ openai, backup, anthropic }) => ({
      routing: { maxAttempts: 3, backoffMs: 20, cooldownMs: 200, maxRetryAfterMs: 3000 },
      models: {
        'vendor-gpt-4': { price: { inputPer1k: 1, outputPer1k: 2 } },
        'vendor-gpt-4-mini': { price: { inputPer1k: 1, outputPer1k: 2 } },
        'vendor-claude-3': { price: { inputPer1k: 1, outputPer1k: 2 } },
        'pooled-gpt': { kind: 'chat', price: { inputPer1k: 1, outputPer1k: 2 } },
        'text-embedding-v3': { price: { inputPer1k: 1, outputPer1k: 0 } },
      },
      deployments: [
        {
          name: 'primary',
          type: 'openai',
          baseUrl: openai.url,
          apiKeyEnv: 'FAKE_OPENAI_KEY',
          timeoutMs: 30_000,
          models: [
            { name: 'vendor-gpt-4', upstream: 'gpt-4o' },
            { name: 'vendor-gpt-4-mini', upstream: 'gpt-4o-mini' },
            'text-embedding-v3',
            { name: 'pooled-gpt', upstream: 'gpt-pool-a' },
          ],
        },
        // The same server under a second deployment: whichever of the two the router tries first
        // meets the one failure the server is told to give, and the other serves the fallback.
        {
          name: 'pool-b',
          type: 'openai',
          baseUrl: openai.url,
          apiKeyEnv: 'FAKE_OPENAI_KEY',
          timeoutMs: 30_000,
          models: [{ name: 'pooled-gpt', upstream: 'gpt-pool-b' }],
        },
        {
          name: 'backup',
          type: 'openai',
          baseUrl: backup.url,
          weight: 0,
          timeoutMs: 30_000,
          models: ['vendor-llama-70b'],
        },
        {
          name: 'claude',
          type: 'anthropic',
          baseUrl: anthropic.url,
          apiKeyEnv: 'FAKE_ANTHROPIC_KEY',
          timeoutMs: 30_000,
          models: [{ name: 'vendor-claude-3', upstream: 'claude-3-5-sonnet-latest' }],
        },
      ],
    }));
    key = (await f.createKey({ name: 'telemetry' })).key;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    upstreamPort = Number(new URL(f.openai.url).port);
  });
  afterAll(async () => {
    await f?.close();
  });
  beforeEach(() => {
    exporter.reset();
    for (const u of [f.openai, f.anthropic]) {
      const apiKey = u.behaviour.apiKey;
      u.reset();
      u.behaviour.apiKey = apiKey;
    }
  });

  const openaiServer = () => ({ 'server.address': '127.0.0.1', 'server.port': upstreamPort });

  it('chat: one CLIENT span under the request span, with the golden attribute set; no content by default', async () => {
    f.openai.behaviour.usageDetails = { cachedTokens: 1, reasoningTokens: 2 };
    const res = await client.chat.completions.create({
      model: 'vendor-gpt-4',
      messages: [{ role: 'user', content: 'secret words here' }],
      max_tokens: 50,
      temperature: 0.5,
      top_p: 0.9,
      stop: ['END'],
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
    });
    expect(res.choices[0].message.content).toBe('Echo: secret words here');
    const spans = genAiSpans();
    expect(spans).toHaveLength(1);
    const [span] = spans;
    expect(span.name).toBe('chat gpt-4o');
    expect(span.kind).toBe(SpanKind.CLIENT);
    expect(span.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      ...openaiServer(),
      'ai_gateway.model': 'vendor-gpt-4',
      'ai_gateway.deployment': 'primary',
      'ai_gateway.attempt': 1,
      'gen_ai.request.max_tokens': 50,
      'gen_ai.request.temperature': 0.5,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.stop_sequences': ['END'],
      'gen_ai.request.seed': 7,
      'gen_ai.request.presence_penalty': 0.1,
      'gen_ai.request.frequency_penalty': 0.2,
      'gen_ai.response.id': 'chatcmpl-fake1',
      'gen_ai.response.model': 'gpt-4o',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': res.usage!.prompt_tokens,
      'gen_ai.usage.output_tokens': 4,
      'gen_ai.usage.cache_read.input_tokens': 1,
      'gen_ai.usage.reasoning.output_tokens': 2,
    });
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toContain('secret words');
    // Parent: the incoming request's SERVER span; the upstream HTTP call nests under the GenAI span.
    const parent = serverSpan(span)!;
    expect(parent.kind).toBe(SpanKind.SERVER);
    expect(parent.attributes['url.path'] ?? parent.attributes['http.target']).toBe('/v1/chat/completions');
    const http = exporter.getFinishedSpans().filter((s) => s.parentSpanContext?.spanId === span.spanContext().spanId);
    expect(http.map((s) => s.kind)).toEqual([SpanKind.CLIENT]);
  });

  it('streamed chat: time to first chunk, finish reasons and usage from the stream', async () => {
    const stream = await client.chat.completions.create({
      model: 'vendor-gpt-4-mini',
      messages: [{ role: 'user', content: 'one two' }],
      max_tokens: 20,
      stream: true,
    });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    expect(text).toBe('Echo: one two');
    const [span, ...more] = genAiSpans();
    expect(more).toEqual([]);
    expect(span.name).toBe('chat gpt-4o-mini');
    const { 'gen_ai.response.time_to_first_chunk': ttfc, ...rest } = span.attributes;
    expect(typeof ttfc).toBe('number');
    expect(ttfc).toBeGreaterThan(0);
    expect(rest).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      ...openaiServer(),
      'ai_gateway.model': 'vendor-gpt-4-mini',
      'ai_gateway.deployment': 'primary',
      'ai_gateway.attempt': 1,
      'gen_ai.request.max_tokens': 20,
      'gen_ai.response.id': 'chatcmpl-fake1',
      'gen_ai.response.model': 'gpt-4o-mini',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': expect.any(Number),
      'gen_ai.usage.output_tokens': 3,
    });
    expect(serverSpan(span)!.kind).toBe(SpanKind.SERVER);
  });

  it('Anthropic: provider anthropic, the upstream model and its answer id', async () => {
    const res = await client.chat.completions.create({
      model: 'vendor-claude-3',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 30,
    });
    const [span] = genAiSpans();
    expect(span.name).toBe('chat claude-3-5-sonnet-latest');
    expect(span.attributes).toMatchObject({
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-3-5-sonnet-latest',
      'gen_ai.response.model': 'claude-3-5-sonnet-latest',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.output_tokens': res.usage!.completion_tokens,
      'server.port': Number(new URL(f.anthropic.url).port),
    });
  });

  it('embeddings: the embeddings operation, encoding format and input tokens', async () => {
    await client.embeddings.create({
      model: 'text-embedding-v3',
      input: ['alpha beta', 'gamma'],
      encoding_format: 'float',
    });
    const [span, ...more] = genAiSpans();
    expect(more).toEqual([]);
    expect(span.name).toBe('embeddings text-embedding-v3');
    expect(span.attributes).toEqual({
      'gen_ai.operation.name': 'embeddings',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'text-embedding-v3',
      ...openaiServer(),
      'ai_gateway.model': 'text-embedding-v3',
      'ai_gateway.deployment': 'primary',
      'ai_gateway.attempt': 1,
      'gen_ai.request.encoding_formats': ['float'],
      'gen_ai.response.model': 'text-embedding-v3',
      'gen_ai.usage.input_tokens': 3,
    });
  });

  it('Responses: the upstream chat call it makes, under the /v1/responses request', async () => {
    const res = await client.responses.create({
      model: 'vendor-gpt-4',
      input: 'hello gateway',
      max_output_tokens: 40,
      temperature: 0.3,
    });
    expect(res.output_text).toBe('Echo: hello gateway');
    const [span, ...more] = genAiSpans();
    expect(more).toEqual([]);
    expect(span.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      ...openaiServer(),
      'ai_gateway.model': 'vendor-gpt-4',
      'ai_gateway.deployment': 'primary',
      'ai_gateway.attempt': 1,
      'gen_ai.request.max_tokens': 40,
      'gen_ai.request.temperature': 0.3,
      'gen_ai.response.id': 'chatcmpl-fake1',
      'gen_ai.response.model': 'gpt-4o',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': res.usage!.input_tokens,
      'gen_ai.usage.output_tokens': res.usage!.output_tokens,
    });
    const parent = serverSpan(span)!;
    expect(parent.attributes['url.path'] ?? parent.attributes['http.target']).toBe('/v1/responses');
  });

  it('completions: text_completion with its parameters', async () => {
    await client.completions.create({
      model: 'vendor-gpt-4',
      prompt: 'say this',
      max_tokens: 10,
      n: 2,
      temperature: 0,
    });
    const [span, ...more] = genAiSpans();
    expect(more).toEqual([]);
    expect(span.name).toBe('text_completion gpt-4o');
    expect(span.attributes).toEqual({
      'gen_ai.operation.name': 'text_completion',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      ...openaiServer(),
      'ai_gateway.model': 'vendor-gpt-4',
      'ai_gateway.deployment': 'primary',
      'ai_gateway.attempt': 1,
      'gen_ai.request.max_tokens': 10,
      'gen_ai.request.temperature': 0,
      'gen_ai.request.choice.count': 2,
      'gen_ai.response.id': 'cmpl-fake1',
      'gen_ai.response.model': 'gpt-4o',
      'gen_ai.response.finish_reasons': ['stop', 'stop'],
      'gen_ai.usage.input_tokens': expect.any(Number),
      'gen_ai.usage.output_tokens': expect.any(Number),
    });
  });

  it('a retried call: two sibling spans under one request span, the first with error.type', async () => {
    f.openai.behaviour.failTimes = 1;
    await client.chat.completions.create({
      model: 'vendor-gpt-4-mini',
      messages: [{ role: 'user', content: 'again' }],
      max_tokens: 10,
    });
    const spans = genAiSpans().sort(
      (a, b) => Number(a.attributes['ai_gateway.attempt']) - Number(b.attributes['ai_gateway.attempt']),
    );
    expect(
      spans.map((s) => [
        s.name,
        s.attributes['ai_gateway.deployment'],
        s.attributes['ai_gateway.attempt'],
        s.attributes['error.type'],
        s.status.code,
      ]),
    ).toEqual([
      ['chat gpt-4o-mini', 'primary', 1, '500', 2],
      ['chat gpt-4o-mini', 'primary', 2, undefined, 0],
    ]);
    expect(spans[0].attributes).not.toHaveProperty('gen_ai.response.id');
    expect(spans[1].attributes['gen_ai.response.id']).toBe('chatcmpl-fake2');
    const parents = new Set(spans.map((s) => s.parentSpanContext?.spanId));
    expect(parents.size).toBe(1);
    expect(serverSpan(spans[0])!.kind).toBe(SpanKind.SERVER);
  });

  it('a fallback: the failed attempt on one deployment and the answer from the other, siblings', async () => {
    f.openai.behaviour.failTimes = 1;
    const res = await client.chat.completions.create({
      model: 'pooled-gpt',
      messages: [{ role: 'user', content: 'pool' }],
      max_tokens: 10,
    });
    expect(res.choices[0].message.content).toBe('Echo: pool');
    const spans = genAiSpans().sort(
      (a, b) => Number(a.attributes['ai_gateway.attempt']) - Number(b.attributes['ai_gateway.attempt']),
    );
    expect(spans).toHaveLength(2);
    const upstreamOf = { primary: 'gpt-pool-a', 'pool-b': 'gpt-pool-b' } as Record<string, string>;
    const [failed, served] = spans;
    expect(failed.attributes['ai_gateway.deployment']).not.toBe(served.attributes['ai_gateway.deployment']);
    for (const s of spans)
      expect(s.attributes['gen_ai.request.model']).toBe(upstreamOf[String(s.attributes['ai_gateway.deployment'])]);
    expect(failed.attributes).toMatchObject({
      'error.type': '500',
      'ai_gateway.attempt': 1,
      'ai_gateway.model': 'pooled-gpt',
    });
    expect(served.attributes).toMatchObject({ 'ai_gateway.attempt': 2, 'gen_ai.response.finish_reasons': ['stop'] });
    expect(served.attributes['error.type']).toBeUndefined();
    expect(failed.parentSpanContext?.spanId).toBe(served.parentSpanContext?.spanId);
    expect(serverSpan(failed)!.kind).toBe(SpanKind.SERVER);
  });

  it('metrics: token usage, operation duration and time to first chunk in Prometheus with the convention buckets; cost and overhead', async () => {
    const before = await scrape(f.gw.url);
    f.openai.behaviour.failTimes = 1;
    await client.chat.completions.create({
      model: 'vendor-gpt-4-mini',
      messages: [{ role: 'user', content: 'count these words' }],
      max_tokens: 10,
    });
    const stream = await client.chat.completions.create({
      model: 'vendor-gpt-4-mini',
      messages: [{ role: 'user', content: 'streamed' }],
      max_tokens: 10,
      stream: true,
    });
    for await (const _ of stream) void _;
    const after = await scrape(f.gw.url);
    const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);

    const base = {
      gen_ai_operation_name: 'chat',
      gen_ai_provider_name: 'openai',
      gen_ai_request_model: 'gpt-4o-mini',
      server_address: '127.0.0.1',
      server_port: upstreamPort,
    };
    const ok = { ...base, gen_ai_response_model: 'gpt-4o-mini' };
    // The failed attempt: a duration with error.type, no tokens.
    expect(delta(series('gen_ai_client_operation_duration_seconds_count', { ...base, error_type: '500' }))).toBe(1);
    expect(delta(series('gen_ai_client_operation_duration_seconds_count', ok))).toBe(2);
    expect(delta(series('gen_ai_client_operation_time_to_first_chunk_seconds_count', ok))).toBe(1);
    // Output tokens: "Echo: count these words" is 4 words, "Echo: streamed" 2 (the fake's tokens).
    expect(delta(series('gen_ai_client_token_usage_count', { ...ok, gen_ai_token_type: 'output' }))).toBe(2);
    expect(delta(series('gen_ai_client_token_usage_sum', { ...ok, gen_ai_token_type: 'output' }))).toBe(6);
    expect(delta(series('gen_ai_client_token_usage_count', { ...ok, gen_ai_token_type: 'input' }))).toBe(2);
    // The convention's bucket boundaries, exactly.
    const buckets = (name: string, labels: Record<string, string | number>) =>
      [...after.keys()]
        .filter(
          (k) => k.startsWith(`${name}_bucket{`) && Object.entries(labels).every(([l, v]) => k.includes(`${l}="${v}"`)),
        )
        .map((k) => /le="([^"]+)"/.exec(k)![1]);
    expect(buckets('gen_ai_client_token_usage', { ...ok, gen_ai_token_type: 'output' })).toEqual([
      '1',
      '4',
      '16',
      '64',
      '256',
      '1024',
      '4096',
      '16384',
      '65536',
      '262144',
      '1048576',
      '4194304',
      '16777216',
      '67108864',
      '+Inf',
    ]);
    expect(buckets('gen_ai_client_operation_duration_seconds', ok)).toEqual([
      '0.01',
      '0.02',
      '0.04',
      '0.08',
      '0.16',
      '0.32',
      '0.64',
      '1.28',
      '2.56',
      '5.12',
      '10.24',
      '20.48',
      '40.96',
      '81.92',
      '+Inf',
    ]);
    // Two calls of 1 yuan / 1000 tokens in and 2 out: cost counted per model, deployment and endpoint.
    expect(
      delta(
        series('ai_gateway_cost_yuan_total', {
          model: 'vendor-gpt-4-mini',
          deployment: 'primary',
          endpoint: 'chat.completions',
        }),
      ),
    ).toBeGreaterThan(0);
    expect(delta(series('ai_gateway_overhead_seconds_count', { endpoint: 'chat.completions' }))).toBe(2);
  });
});

describe('GenAI telemetry: content capture is opt-in', () => {
  let f: GatewayFixture;
  beforeAll(async () => {
    f = await startGatewayFixture({ AI_OTEL_CAPTURE_CONTENT: 'true' });
  });
  afterAll(() => f?.close());

  it('records the input and output messages when AI_OTEL_CAPTURE_CONTENT=true', async () => {
    exporter.reset();
    const { key } = await f.createKey({ name: 'content' });
    const client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    await client.chat.completions.create({
      model: 'vendor-gpt-4',
      messages: [
        { role: 'system', content: 'be kind' },
        { role: 'user', content: 'hello content' },
      ],
      max_tokens: 20,
    });
    const [span] = genAiSpans();
    expect(JSON.parse(String(span.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'be kind' }] },
      { role: 'user', parts: [{ type: 'text', content: 'hello content' }] },
    ]);
    expect(JSON.parse(String(span.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'Echo: hello content' }], finish_reason: 'stop' },
    ]);
  });
});

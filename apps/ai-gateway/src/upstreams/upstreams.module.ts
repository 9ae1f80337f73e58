import { Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { LlmRouter, loadProvidersFile, parseProvidersConfig } from '@app/llm';
import { localLlmEngines } from '@app/engines';
import { Clock, GenAiMetrics, Metrics, metricsEndpoint } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { otelServiceName } from '@app/platform/tracing';
import { UpstreamEvents } from './upstream-events';

/** Builds the router from AI_PROVIDERS_FILE (validated at boot: a bad file stops the gateway with the reason). */
export function createRouter(config: GatewayConfig, clock: Clock = new Clock(), metrics?: GenAiMetrics): LlmRouter {
  // Cooldowns end by the app's Clock (tests move it instead of sleeping).
  const now = () => clock.now();
  const telemetry = { metrics, captureContent: config.AI_OTEL_CAPTURE_CONTENT };
  const log = new Logger('Routing');
  if (!config.AI_PROVIDERS_FILE) {
    log.warn('AI_PROVIDERS_FILE is not set: chat and embeddings answer 503 until upstreams are configured');
    return new LlmRouter(parseProvidersConfig({}), { now, telemetry });
  }
  // `type: local` deployments may name the in-process embeddings engine (engine: use-lite-en).
  const router = new LlmRouter(loadProvidersFile(config.AI_PROVIDERS_FILE), {
    localEngines: localLlmEngines(),
    now,
    telemetry,
  });
  const served = router.servedModels();
  log.log(
    `${router.config.deployments.length} deployment(s) serving ${served.map((m) => m.name).join(', ') || 'no models'}`,
  );
  for (const m of served) {
    if (m.kind === 'chat' && m.price.inputPer1k === 0 && m.price.outputPer1k === 0)
      log.warn(`model ${m.name} has no price: calls are metered at 0 yuan (set models.${m.name}.price)`);
  }
  return router;
}

/** The GenAI metrics in the app's Prometheus registry, and over OTLP when a metrics endpoint is configured. */
export function createGenAiMetrics(metrics: Metrics, config: GatewayConfig): GenAiMetrics {
  const endpoint = metricsEndpoint(config);
  const serviceName = otelServiceName('ai-gateway');
  return new GenAiMetrics(
    metrics.registry,
    endpoint ? { otlp: { endpoint, intervalMs: config.OTEL_METRIC_EXPORT_INTERVAL, serviceName } } : {},
  );
}

@Injectable()
class RouterShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(LlmRouter) private readonly router: LlmRouter,
    @Inject(GenAiMetrics) private readonly metrics: GenAiMetrics,
  ) {}
  async onApplicationShutdown(): Promise<void> {
    await this.router.close();
    // Points recorded since the last export are sent before the process goes.
    await this.metrics.shutdown();
  }
}

/** The upstream router (@app/llm's LlmRouter) built from AI_PROVIDERS_FILE with its GenAI telemetry and its upstream.* events, closed at shutdown. */
@Module({
  providers: [
    { provide: GenAiMetrics, inject: [Metrics, GatewayConfig], useFactory: createGenAiMetrics },
    { provide: LlmRouter, inject: [GatewayConfig, Clock, GenAiMetrics], useFactory: createRouter },
    RouterShutdown,
    UpstreamEvents,
  ],
  exports: [LlmRouter, GenAiMetrics],
})
export class UpstreamsModule {}

import { Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { LlmRouter, loadProvidersFile, parseProvidersConfig } from '@app/llm';
import { localLlmEngines } from '@app/engines';
import { Clock } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';

/** Builds the router from AI_PROVIDERS_FILE (validated at boot: a bad file stops the gateway with the reason). */
export function createRouter(config: GatewayConfig, clock: Clock = new Clock()): LlmRouter {
  // Cooldowns end by the app's Clock (tests move it instead of sleeping).
  const now = () => clock.now();
  const log = new Logger('Routing');
  if (!config.AI_PROVIDERS_FILE) {
    log.warn('AI_PROVIDERS_FILE is not set: chat and embeddings answer 503 until upstreams are configured');
    return new LlmRouter(parseProvidersConfig({}), { now });
  }
  // `type: local` deployments may name the in-process embeddings engine (engine: use-lite-en).
  const router = new LlmRouter(loadProvidersFile(config.AI_PROVIDERS_FILE), { localEngines: localLlmEngines(), now });
  const served = router.servedModels();
  log.log(`${router.config.deployments.length} deployment(s) serving ${served.map((m) => m.name).join(', ') || 'no models'}`);
  for (const m of served) {
    if (m.kind === 'chat' && m.price.inputPer1k === 0 && m.price.outputPer1k === 0) log.warn(`model ${m.name} has no price: calls are metered at 0 yuan (set models.${m.name}.price)`);
  }
  return router;
}

@Injectable()
class RouterShutdown implements OnApplicationShutdown {
  constructor(@Inject(LlmRouter) private readonly router: LlmRouter) {}
  async onApplicationShutdown(): Promise<void> {
    await this.router.close();
  }
}

/** The upstream router (@app/llm's LlmRouter) built from AI_PROVIDERS_FILE, closed at shutdown. */
@Module({
  providers: [{ provide: LlmRouter, inject: [GatewayConfig, Clock], useFactory: createRouter }, RouterShutdown],
  exports: [LlmRouter],
})
export class UpstreamsModule {}

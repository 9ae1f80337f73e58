import { systemContext } from '@app/audit';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKeysService } from './api-keys.service';

/**
 * Development only: when no usable key exists, issue one and print it once to the terminal (not to
 * the structured log), so `npm start` can be tried at once.
 */
@Injectable()
export class DevelopmentKey implements OnApplicationBootstrap {
  private readonly log = new Logger('ApiKeys');

  constructor(
    private readonly keys: ApiKeysService,
    private readonly config: GatewayConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.NODE_ENV !== 'development' || !this.config.AI_DEV_KEY) return;
    if ((await this.keys.countUsable()) > 0) return;
    const created = await this.keys.create({ name: 'development (created at boot)' }, systemContext());
    this.log.warn(`No API key existed: created development key ${created.prefix}… (printed once on stdout)`);
    process.stdout.write(`\n  Development API key (shown once): ${created.key}\n\n`);
  }
}

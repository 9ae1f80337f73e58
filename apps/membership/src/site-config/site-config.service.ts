import { Injectable } from '@nestjs/common';
import type { AuditContext } from '@app/audit';
import { PUBLIC_PREFIXES } from './dtos/site-config.dto';
import { SiteConfigRepository } from './site-config.repository';

@Injectable()
export class SiteConfigService {
  constructor(private readonly settings: SiteConfigRepository) {}

  async values(onlyPublic: boolean): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const s of await this.settings.all()) {
      if (!onlyPublic || PUBLIC_PREFIXES.some((p) => s.key.startsWith(p))) out[s.key] = s.value;
    }
    return out;
  }

  /** The site's name as its settings give it (`site.name`), for messages to members and the passkey prompt. */
  async siteName(): Promise<string> {
    const name = (await this.values(true))['site.name']?.trim();
    return name || 'Membership';
  }

  async update(values: Record<string, string | null>, ctx: AuditContext): Promise<Record<string, string>> {
    await this.settings.apply(values, ctx.actor.kind === 'member' ? ctx.actor.id : null, ctx);
    return this.values(false);
  }
}

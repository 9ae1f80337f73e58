import { Inject, Injectable } from '@nestjs/common';
import type { AuditContext } from '@app/audit';
import { AddressRefused, addressAllowList, BaseConfig, Clock, publicAddressesOf } from '@app/platform';
import {
  CreatedWebhookEndpointView,
  CreateWebhookEndpointRequest,
  UpdateWebhookEndpointRequest,
  WebhookDeliveryList,
  WebhookDeliveryView,
  WebhookEndpointView,
} from './webhook.dto';
import { DeliveryRow, EndpointChanges, EndpointRow, WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WEBHOOK_OPTIONS, WebhookOptions } from './webhook-options';
import { WebhookSecrets } from './webhook-secrets';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DELIVERY_ID = /^[1-9][0-9]{0,18}$/;

/** The webhook admin API of an app: endpoints (secret shown once), their delivery log, manual redelivery. */
@Injectable()
export class WebhookEndpointsService {
  constructor(
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly secrets: WebhookSecrets,
    private readonly config: BaseConfig,
    private readonly clock: Clock,
    @Inject(WEBHOOK_OPTIONS) private readonly options: WebhookOptions,
  ) {}

  async create(req: CreateWebhookEndpointRequest, ctx: AuditContext): Promise<CreatedWebhookEndpointView> {
    if (!this.secrets.configured) throw this.options.errors.notConfigured();
    const events = this.eventsOf(req.events);
    await this.vetUrl(req.url);
    const secret = this.secrets.generate();
    const row = await this.endpoints.insert(
      { url: req.url, description: req.description ?? '', events },
      (id) => this.secrets.seal(secret, id),
      ctx,
    );
    return { ...toEndpointView(row), secret };
  }

  async list(): Promise<{ data: WebhookEndpointView[] }> {
    return { data: (await this.endpoints.list()).map(toEndpointView) };
  }

  async get(id: string): Promise<WebhookEndpointView> {
    return toEndpointView(await this.mustFind(id));
  }

  async update(id: string, req: UpdateWebhookEndpointRequest, ctx: AuditContext): Promise<WebhookEndpointView> {
    await this.mustFind(id);
    const changes: EndpointChanges = { description: req.description, enabled: req.enabled };
    if (req.events !== undefined) changes.events = this.eventsOf(req.events);
    if (req.url !== undefined) {
      await this.vetUrl(req.url);
      changes.url = req.url;
    }
    const row = await this.endpoints.update(id, changes, ctx, new Date(this.clock.now()), this.retryMs());
    if (!row) throw this.options.errors.endpointNotFound(id);
    return toEndpointView(row);
  }

  async delete(id: string, ctx: AuditContext): Promise<{ id: string; deleted: true }> {
    if (!UUID.test(id) || !(await this.endpoints.delete(id, ctx))) throw this.options.errors.endpointNotFound(id);
    return { id, deleted: true };
  }

  async deliveries(id: string, cursor: string | undefined, limit: number): Promise<WebhookDeliveryList> {
    await this.mustFind(id);
    const rows = await this.endpoints.deliveries(id, cursor ?? null, limit + 1);
    const data = rows.slice(0, limit).map(toDeliveryView);
    return { data, next_cursor: rows.length > limit ? data[data.length - 1].id : null };
  }

  async redeliver(id: string, deliveryId: string, ctx: AuditContext): Promise<WebhookDeliveryView> {
    await this.mustFind(id);
    const row = DELIVERY_ID.test(deliveryId)
      ? await this.endpoints.redeliver(id, deliveryId, ctx, new Date(this.clock.now()), this.retryMs())
      : null;
    if (!row) throw this.options.errors.deliveryNotFound(deliveryId);
    return toDeliveryView(row);
  }

  private retryMs(): number {
    return this.config.WEBHOOK_RETRY_HOURS * 3_600_000;
  }

  private async mustFind(id: string): Promise<EndpointRow> {
    const row = UUID.test(id) ? await this.endpoints.find(id) : null;
    if (!row) throw this.options.errors.endpointNotFound(id);
    return row;
  }

  private eventsOf(events: string[] | null | undefined): string[] | null {
    if (events === null || events === undefined) return null;
    const unknown = events.filter((e) => !this.options.events.includes(e));
    if (unknown.length)
      throw this.options.errors.invalid(
        'events',
        `unknown event ${unknown[0]}; known: ${this.options.events.join(', ')}`,
      );
    if (!events.length) throw this.options.errors.invalid('events', 'name at least one event, or null for all');
    return [...new Set(events)];
  }

  /** The same public-address guard as every delivery (webhook-sender.ts), so a private target is refused at once. */
  private async vetUrl(url: string): Promise<void> {
    const parsed = new URL(url);
    if (parsed.username || parsed.password) throw this.options.errors.invalid('url', 'url must not carry credentials');
    try {
      await publicAddressesOf(parsed, {
        allowed: addressAllowList(allowedCidrs(this.config)),
        // As long as a delivery's whole attempt may take: the name's lookup has no longer here.
        signal: AbortSignal.timeout(this.config.WEBHOOK_TIMEOUT_MS),
      });
    } catch (e) {
      if (e instanceof AddressRefused && e.reason === 'forbidden')
        throw this.options.errors.invalid(
          'url',
          'url must reach a public address (WEBHOOK_ALLOWED_CIDRS lists the exceptions)',
        );
      throw this.options.errors.invalid('url', 'url host does not resolve');
    }
  }
}

export function allowedCidrs(config: BaseConfig): string[] {
  return (config.WEBHOOK_ALLOWED_CIDRS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function toEndpointView(r: EndpointRow): WebhookEndpointView {
  return {
    id: r.id,
    url: r.url,
    description: r.description,
    events: r.events,
    enabled: r.enabled,
    disabled_reason: r.disabled_reason,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function toDeliveryView(r: DeliveryRow): WebhookDeliveryView {
  return {
    id: String(r.id),
    event_id: r.event_id,
    event_type: r.event_type,
    status: r.status,
    attempts: r.attempts,
    last_status: r.last_status,
    last_error: r.last_error,
    last_attempt_at: iso(r.last_attempt_at),
    next_attempt_at: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    delivered_at: iso(r.delivered_at),
    created_at: new Date(r.created_at).toISOString(),
    payload: r.payload,
  };
}

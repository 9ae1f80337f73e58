import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AuditContext, AuditRequest } from '@app/audit';
import { Roles } from '@app/auth';
import { ApiEnvelope, ErrorEnvelope } from '@app/envelope';
import {
  CreatedWebhookEndpointView,
  CreateWebhookEndpointRequest,
  ListWebhookDeliveriesQuery,
  UpdateWebhookEndpointRequest,
  WebhookDeliveryList,
  WebhookDeliveryView,
  WebhookEndpointList,
  WebhookEndpointView,
  WebhookEndpointsService,
} from '@app/webhooks';
import { MEMBERSHIP_WEBHOOK_EVENTS } from './membership-webhooks';

/** Webhook endpoints of membership (admins); deliveries are signed per Standard Webhooks (docs/audit-log-and-webhooks.md). */
@ApiTags('Webhooks')
@Roles('admin')
@ApiResponse({ status: 401, description: 'code 401: no or bad token', type: ErrorEnvelope })
@ApiResponse({ status: 403, description: 'code 403: not an admin', type: ErrorEnvelope })
@Controller('api/v1/admin/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhookEndpointsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Register a webhook endpoint (admin)',
    description: `The signing secret (whsec_...) is in this response only. Events: ${MEMBERSHIP_WEBHOOK_EVENTS.join(', ')}.`,
  })
  @ApiBody({
    type: CreateWebhookEndpointRequest,
    examples: {
      members: {
        value: {
          url: 'https://hooks.example.com/members',
          events: ['member.registered', 'member.disabled'],
          description: 'CRM sync',
        },
      },
      all: { value: { url: 'https://hooks.example.com/members' } },
    },
  })
  @ApiEnvelope(CreatedWebhookEndpointView)
  @ApiResponse({
    status: 400,
    description: 'code 10000: bad URL (or not a public address) or unknown event',
    type: ErrorEnvelope,
  })
  @ApiResponse({
    status: 503,
    description: 'code 503: WEBHOOK_ENCRYPTION_SECRET missing in production',
    type: ErrorEnvelope,
  })
  create(
    @Body() body: CreateWebhookEndpointRequest,
    @AuditRequest() ctx: AuditContext,
  ): Promise<CreatedWebhookEndpointView> {
    return this.webhooks.create(body, ctx);
  }

  @Roles('viewer')
  @Get()
  @ApiOperation({ summary: 'List webhook endpoints (admin)' })
  @ApiEnvelope(WebhookEndpointList)
  list(): Promise<WebhookEndpointList> {
    return this.webhooks.list();
  }

  @Roles('viewer')
  @Get(':id')
  @ApiOperation({ summary: 'Get one webhook endpoint (admin)' })
  @ApiEnvelope(WebhookEndpointView)
  @ApiResponse({ status: 404, description: 'code 404: no such endpoint', type: ErrorEnvelope })
  get(@Param('id') id: string): Promise<WebhookEndpointView> {
    return this.webhooks.get(id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change URL, events or description; enable again after a disable (admin)' })
  @ApiBody({
    type: UpdateWebhookEndpointRequest,
    examples: { enable: { value: { enabled: true } }, allEvents: { value: { events: null } } },
  })
  @ApiEnvelope(WebhookEndpointView)
  @ApiResponse({ status: 400, description: 'code 10000: bad URL or unknown event', type: ErrorEnvelope })
  @ApiResponse({ status: 404, description: 'code 404: no such endpoint', type: ErrorEnvelope })
  update(
    @Param('id') id: string,
    @Body() body: UpdateWebhookEndpointRequest,
    @AuditRequest() ctx: AuditContext,
  ): Promise<WebhookEndpointView> {
    return this.webhooks.update(id, body, ctx);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete a webhook endpoint and its delivery log (admin)' })
  @ApiEnvelope(null)
  @ApiResponse({ status: 404, description: 'code 404: no such endpoint', type: ErrorEnvelope })
  delete(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<{ id: string; deleted: true }> {
    return this.webhooks.delete(id, ctx);
  }

  @Roles('viewer')
  @Get(':id/deliveries')
  @ApiOperation({ summary: "The endpoint's delivery log, newest first (admin)" })
  @ApiEnvelope(WebhookDeliveryList)
  @ApiResponse({ status: 404, description: 'code 404: no such endpoint', type: ErrorEnvelope })
  deliveries(@Param('id') id: string, @Query() q: ListWebhookDeliveriesQuery): Promise<WebhookDeliveryList> {
    return this.webhooks.deliveries(id, q.cursor, q.limit ?? 50);
  }

  @Post(':id/deliveries/:deliveryId/redeliver')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Send a delivery again (admin)',
    description:
      'Queued at once with a fresh retry window; the same webhook-id, so receivers can drop a copy they have.',
  })
  @ApiEnvelope(WebhookDeliveryView)
  @ApiResponse({ status: 404, description: 'code 404: no such endpoint or delivery', type: ErrorEnvelope })
  redeliver(
    @Param('id') id: string,
    @Param('deliveryId') deliveryId: string,
    @AuditRequest() ctx: AuditContext,
  ): Promise<WebhookDeliveryView> {
    return this.webhooks.redeliver(id, deliveryId, ctx);
  }
}

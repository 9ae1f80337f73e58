import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuditContext, AuditRequest } from '@app/audit';
import { Roles } from '@app/auth';
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
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { GATEWAY_WEBHOOK_EVENTS } from './gateway-webhooks';

/** Webhook endpoints of the gateway (ADMIN_TOKEN); deliveries are signed per Standard Webhooks (docs/audit-log-and-webhooks.md). */
@ApiTags('admin')
@Roles('admin')
@Controller('admin/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhookEndpointsService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Register a webhook endpoint',
    description: `The signing secret (whsec_...) is in this response only. Events: ${GATEWAY_WEBHOOK_EVENTS.join(', ')}.`,
  })
  @ApiBody({
    type: CreateWebhookEndpointRequest,
    examples: {
      budgets: {
        value: {
          url: 'https://hooks.example.com/ai',
          events: ['key.budget.threshold_reached', 'key.budget.exhausted'],
          description: 'budget alerts',
        },
      },
      all: { value: { url: 'https://hooks.example.com/ai' } },
    },
  })
  @ApiCreatedResponse({ type: CreatedWebhookEndpointView })
  @ApiOpenAiErrors(400, 401, 403, 503)
  create(
    @Body() body: CreateWebhookEndpointRequest,
    @AuditRequest() ctx: AuditContext,
  ): Promise<CreatedWebhookEndpointView> {
    return this.webhooks.create(body, ctx);
  }

  @Roles('viewer')
  @Get()
  @ApiOperation({ summary: 'List webhook endpoints' })
  @ApiOkResponse({ type: WebhookEndpointList })
  @ApiOpenAiErrors(401, 403)
  list(): Promise<WebhookEndpointList> {
    return this.webhooks.list();
  }

  @Roles('viewer')
  @Get(':id')
  @ApiOperation({ summary: 'Get one webhook endpoint' })
  @ApiOkResponse({ type: WebhookEndpointView })
  @ApiOpenAiErrors(401, 403, 404)
  get(@Param('id') id: string): Promise<WebhookEndpointView> {
    return this.webhooks.get(id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change URL, events or description; enable again after a disable' })
  @ApiBody({
    type: UpdateWebhookEndpointRequest,
    examples: { enable: { value: { enabled: true } }, allEvents: { value: { events: null } } },
  })
  @ApiOkResponse({ type: WebhookEndpointView })
  @ApiOpenAiErrors(400, 401, 403, 404)
  update(
    @Param('id') id: string,
    @Body() body: UpdateWebhookEndpointRequest,
    @AuditRequest() ctx: AuditContext,
  ): Promise<WebhookEndpointView> {
    return this.webhooks.update(id, body, ctx);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete a webhook endpoint and its delivery log' })
  @ApiOkResponse({ schema: { example: { id: '3f6d1c0e-8a4b-4c7e-9d2a-1b5e6f7a8c9d', deleted: true } } })
  @ApiOpenAiErrors(401, 403, 404)
  delete(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<{ id: string; deleted: true }> {
    return this.webhooks.delete(id, ctx);
  }

  @Roles('viewer')
  @Get(':id/deliveries')
  @ApiOperation({ summary: "The endpoint's delivery log, newest first" })
  @ApiOkResponse({ type: WebhookDeliveryList })
  @ApiOpenAiErrors(400, 401, 403, 404)
  deliveries(@Param('id') id: string, @Query() q: ListWebhookDeliveriesQuery): Promise<WebhookDeliveryList> {
    return this.webhooks.deliveries(id, q.cursor, q.limit ?? 50);
  }

  @Post(':id/deliveries/:deliveryId/redeliver')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Send a delivery again',
    description:
      'Queued at once with a fresh retry window; the same webhook-id, so receivers can drop a copy they have.',
  })
  @ApiOkResponse({ type: WebhookDeliveryView })
  @ApiOpenAiErrors(401, 403, 404)
  redeliver(
    @Param('id') id: string,
    @Param('deliveryId') deliveryId: string,
    @AuditRequest() ctx: AuditContext,
  ): Promise<WebhookDeliveryView> {
    return this.webhooks.redeliver(id, deliveryId, ctx);
  }
}

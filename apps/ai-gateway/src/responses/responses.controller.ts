import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { JsonMembersLimit, Metered } from '@app/platform';
import { MAX_CHAT_JSON_MEMBERS } from '../chat/chat-shape';
import { GatewayConfig } from '../config/gateway.config';
import { answerCall } from '../http/call-answer';
import { KeyReads } from '../limits/key-reads';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { CreateResponse } from './create-response.service';
import { ApiCreateResponse, ApiDeleteResponse, ApiListInputItems, ApiRetrieveResponse } from './responses.doc';
import { StoredResponses } from './stored-responses.service';

@ApiTags('responses')
@Controller('v1/responses')
export class ResponsesController {
  constructor(
    private readonly createResponse: CreateResponse,
    private readonly stored: StoredResponses,
    private readonly config: GatewayConfig,
    private readonly reads: KeyReads,
  ) {}

  @Metered()
  @Post()
  @HttpCode(200)
  @JsonMembersLimit(MAX_CHAT_JSON_MEMBERS)
  @ApiCreateResponse()
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: Record<string, unknown>,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await answerCall(req, res, 'responses', this.config.REQUEST_TIMEOUT_MS, (ctx) =>
      this.createResponse.handle(principal, body, ctx),
    );
  }

  @Get(':response_id')
  @ApiRetrieveResponse()
  @ApiOpenAiErrors(400, 401, 403, 404, 429, 503)
  retrieve(
    @CurrentPrincipal() principal: Principal,
    @Param('response_id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<object> {
    return this.reads.run(principal, () => this.stored.retrieve(principal, id, query));
  }

  @Delete(':response_id')
  @HttpCode(200)
  @ApiDeleteResponse()
  @ApiOpenAiErrors(401, 403, 404, 429, 503)
  remove(@CurrentPrincipal() principal: Principal, @Param('response_id') id: string): Promise<object> {
    return this.reads.run(principal, () => this.stored.delete(principal, id));
  }

  @Get(':response_id/input_items')
  @ApiListInputItems()
  @ApiOpenAiErrors(400, 401, 403, 404, 429, 503)
  inputItems(
    @CurrentPrincipal() principal: Principal,
    @Param('response_id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<object> {
    return this.reads.run(principal, () => this.stored.inputItems(principal, id, query));
  }
}

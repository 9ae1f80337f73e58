import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { JsonItemsLimit, Metered } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { answerCall } from '../http/call-answer';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { CreateCompletion } from './create-completion.service';
import { CompletionRequest, CompletionResponse, MAX_PROMPT_TOKENS, MAX_PROMPTS } from './dtos/completion.dto';

@ApiTags('completions')
@Controller('v1/completions')
export class CompletionsController {
  constructor(
    private readonly createCompletion: CreateCompletion,
    private readonly config: GatewayConfig,
  ) {}

  @Metered()
  @Post()
  // Batched token-array prompts are long arrays of numbers by nature (9 prompts of 120 000 token ids pass MAX_JSON_ITEMS):
  // their parse is bounded by BODY_LIMIT_BYTES, as a key holder's body is.
  @JsonItemsLimit(MAX_PROMPTS * MAX_PROMPT_TOKENS)
  @HttpCode(200)
  @ApiOperation({
    summary: 'Create a text completion (legacy OpenAI completions)',
    description:
      'Passed to the OpenAI-type deployments serving the model (a model served only by Anthropic deployments: 400 `model_not_supported`). ' +
      '`max_tokens` (default 16, as OpenAI) is reserved in the budget for every prompt × max(n, best_of) and sent upstream exactly. ' +
      'With `stream: true`: `data: {chunk}` events, then `data: [DONE]`; `stream_options.include_usage` adds the usage chunk. Ledger endpoint `completions`.',
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiBody({
    type: CompletionRequest,
    examples: {
      simple: { value: { model: 'vendor-gpt-4', prompt: 'Once upon a time', max_tokens: 32 } },
      streamed: {
        value: {
          model: 'vendor-gpt-4',
          prompt: ['Say hi', 'Say bye'],
          stream: true,
          stream_options: { include_usage: true },
        },
      },
    },
  })
  @ApiOkResponse({
    type: CompletionResponse,
    description: 'The completion (or the event stream when `stream` is true)',
  })
  @ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true })
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: CompletionRequest,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await answerCall(req, res, 'completions', this.config.REQUEST_TIMEOUT_MS, (ctx) =>
      this.createCompletion.handle(principal, body, ctx),
    );
  }
}

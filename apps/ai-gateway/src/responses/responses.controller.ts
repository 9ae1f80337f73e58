import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { CreateResponse } from './create-response';
import { ResponseObject, ResponsesRequest } from './dtos/responses.dtos';

@ApiTags('responses')
@Controller('v1/responses')
export class ResponsesController {
  constructor(private readonly createResponse: CreateResponse) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Create a model response (OpenAI Responses API subset)',
    description:
      'Runs on the chat upstreams (OpenAI and Anthropic deployments) with the chat scope, model list, budget and ledger (endpoint `responses`). ' +
      '`store` (default true, as OpenAI) keeps the response (input and output items) for AI_RESPONSES_STORE_TTL_HOURS, readable only by the same API key: ' +
      'later calls of that key may send `{type:"item_reference", id}` for its output items (msg_..., fc_...) and `previous_response_id`; an unknown, expired or other key\'s id is a 400 naming it. ' +
      '`conversation` answers 400. The answer says `store: false` when nothing was stored (store: false, storing disabled, too large, or past the key\'s AI_RESPONSES_STORE_MAX_BYTES_PER_KEY). ' +
      'With `stream: true` the answer is `text/event-stream`: `response.created`, `response.in_progress`, `response.output_item.added`, `response.content_part.added`, ' +
      '`response.output_text.delta`, `response.function_call_arguments.delta`, the matching `.done` events, then `response.completed` (or `response.incomplete`) with usage; each event has `sequence_number`. ' +
      'A failure after the stream started arrives as an `error` event followed by `response.failed`.',
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiBody({
    type: ResponsesRequest,
    examples: {
      text: { value: { model: 'vendor-gpt-4', instructions: 'You are concise.', input: 'Say hello in Chinese.', max_output_tokens: 100 } },
      item_reference: {
        summary: 'tool loop referring to the stored function_call',
        value: {
          model: 'vendor-gpt-4',
          input: [
            { role: 'user', content: 'Weather in Paris?' },
            { type: 'item_reference', id: 'fc_67ccd3a9da748190baa7f1570fe91ac6' },
            { type: 'function_call_output', call_id: 'call_1', output: '{"temp_c":18}' },
          ],
        },
      },
      previous_response_id: { value: { model: 'vendor-gpt-4', previous_response_id: 'resp_67ccd3a9da748190baa7f1570fe91ac6', input: [{ type: 'function_call_output', call_id: 'call_1', output: '{"temp_c":18}' }] } },
      tools: {
        value: {
          model: 'vendor-claude-3',
          input: [
            { role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
            { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
            { type: 'function_call_output', call_id: 'call_1', output: '{"temp_c":18}' },
          ],
          tools: [{ type: 'function', name: 'get_weather', description: 'Current weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
          stream: true,
        },
      },
    },
  })
  @ApiOkResponse({ type: ResponseObject, description: 'The response object (or the event stream when `stream` is true)' })
  @ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true })
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  async create(@CurrentPrincipal() principal: Principal, @Body() body: Record<string, unknown>, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.createResponse.handle(principal, body, req, res);
  }
}

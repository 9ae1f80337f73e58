import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { GatewayConfig } from '../config/gateway.config';
import { answerCall } from '../http/call-answer';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { ChatRequestPipe } from './chat-request.pipe';
import { CreateChatCompletion } from './create-chat-completion';
import { ChatCompletionChunkDoc, ChatCompletionRequest, ChatCompletionResponse, ContentPartDoc } from './dtos/chat-completion.dtos';

@ApiTags('chat')
@ApiExtraModels(ContentPartDoc, ChatCompletionChunkDoc)
@Controller('v1/chat')
export class ChatController {
  constructor(
    private readonly createChatCompletion: CreateChatCompletion,
    private readonly config: GatewayConfig,
  ) {}

  @Post('completions')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Create a chat completion (OpenAI-compatible)',
    description:
      'With `stream: true` the answer is `text/event-stream`: `data: {chunk}` lines, each forwarded as it arrives, then `data: [DONE]`. ' +
      'Add `stream_options: {"include_usage": true}` for a last chunk carrying `usage`. A failure after the stream started arrives as `data: {"error": {...}}`. ' +
      'Every response carries `X-Gateway-Overhead-Ms` (time spent inside the gateway, upstream waits excluded). ' +
      'Streamed tool calls arrive as `delta.tool_calls` chunks ({index, id, type, function:{name}} first, then argument fragments), forwarded as the upstream sends them. ' +
      'Unknown top-level fields are bounded and then forwarded to or dropped for the upstream per its deployment (README, "Chat and embeddings rules").',
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiBody({
    type: ChatCompletionRequest,
    examples: {
      simple: { value: { model: 'vendor-gpt-4-mini', messages: [{ role: 'user', content: 'Say hello in Chinese.' }] } },
      streamed: { value: { model: 'vendor-claude-3', stream: true, stream_options: { include_usage: true }, max_tokens: 200, messages: [{ role: 'system', content: 'You are concise.' }, { role: 'user', content: 'Write a haiku about autumn.' }] } },
      tools: {
        summary: 'Function tools: the model answers with tool_calls (finish_reason tool_calls); send the result back as a tool message',
        value: {
          model: 'vendor-gpt-4-mini',
          tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
          tool_choice: 'auto',
          parallel_tool_calls: false,
          messages: [
            { role: 'developer', content: 'Use tools when useful.' },
            { role: 'user', content: 'Weather in Paris?' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
            { role: 'tool', tool_call_id: 'call_abc123', content: '{"temperature_c":18}' },
          ],
        },
      },
      image: {
        summary: 'Content parts: text and an image (URL or data URL)',
        value: { model: 'vendor-gpt-4-mini', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } }] }] },
      },
      audioOutput: {
        summary: 'Audio output: for models whose price declares audioOutputPer1k (the answer carries message.audio; audio tokens billed at that price)',
        value: { model: 'vendor-gpt-4', modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, messages: [{ role: 'user', content: 'Say hello in French.' }] },
      },
      webSearch: {
        summary: 'Web search: for models whose price declares webSearchPerCall (billed once per call on top of the tokens)',
        value: { model: 'vendor-gpt-4', web_search_options: { search_context_size: 'low' }, messages: [{ role: 'user', content: 'What happened in tech news today?' }] },
      },
    },
  })
  @ApiOkResponse({ type: ChatCompletionResponse, description: 'The completion (or, when `stream` is true, the event stream of `ChatCompletionChunkDoc` events)' })
  @ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true })
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  async create(@CurrentPrincipal() principal: Principal, @Body(ChatRequestPipe) body: object, @Req() req: Request, @Res() res: Response): Promise<void> {
    // `object`, not the DTO: the global pipe would refuse unknown top-level fields; ChatRequestPipe validates.
    await answerCall(req, res, 'chat.completions', this.config.REQUEST_TIMEOUT_MS, (ctx) => this.createChatCompletion.handle(principal, body as ChatCompletionRequest, ctx));
  }
}

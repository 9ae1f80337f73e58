import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces } from '@nestjs/swagger';
import { ChatCompletionRequest, ChatCompletionResponse } from './dtos/chat-completion.dto';

/** The OpenAPI operation of POST /v1/chat/completions: its description, request examples and answer (chat.controller.ts). */
export const ApiCreateChatCompletion = () =>
  applyDecorators(
    ApiOperation({
      summary: 'Create a chat completion (OpenAI-compatible)',
      description:
        'With `stream: true` the answer is `text/event-stream`: `data: {chunk}` lines, each forwarded as it arrives, then `data: [DONE]`. ' +
        'Add `stream_options: {"include_usage": true}` for a last chunk carrying `usage`. A failure after the stream started arrives as `data: {"error": {...}}`. ' +
        'Every response carries `X-Gateway-Overhead-Ms` (time spent inside the gateway, upstream waits excluded). ' +
        'Streamed tool calls arrive as `delta.tool_calls` chunks ({index, id, type, function:{name}} first, then argument fragments), forwarded as the upstream sends them. ' +
        'Unknown top-level fields are bounded and then forwarded to or dropped for the upstream per its deployment (docs/ai-gateway/chat.md).',
    }),
    ApiProduces('application/json', 'text/event-stream'),
    ApiBody({
      type: ChatCompletionRequest,
      examples: {
        simple: {
          value: { model: 'vendor-gpt-4-mini', messages: [{ role: 'user', content: 'Say hello in Chinese.' }] },
        },
        streamed: {
          value: {
            model: 'vendor-claude-3',
            stream: true,
            stream_options: { include_usage: true },
            max_tokens: 200,
            messages: [
              { role: 'system', content: 'You are concise.' },
              { role: 'user', content: 'Write a haiku about autumn.' },
            ],
          },
        },
        tools: {
          summary:
            'Function tools: the model answers with tool_calls (finish_reason tool_calls); send the result back as a tool message',
          value: {
            model: 'vendor-gpt-4-mini',
            tools: [
              {
                type: 'function',
                function: {
                  name: 'get_weather',
                  description: 'Current weather of a city',
                  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
                },
              },
            ],
            tool_choice: 'auto',
            parallel_tool_calls: false,
            messages: [
              { role: 'developer', content: 'Use tools when useful.' },
              { role: 'user', content: 'Weather in Paris?' },
              {
                role: 'assistant',
                content: null,
                tool_calls: [
                  {
                    id: 'call_abc123',
                    type: 'function',
                    function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
                  },
                ],
              },
              { role: 'tool', tool_call_id: 'call_abc123', content: '{"temperature_c":18}' },
            ],
          },
        },
        image: {
          summary: 'Content parts: text and an image (URL or data URL)',
          value: {
            model: 'vendor-gpt-4-mini',
            messages: [
              {
                role: 'user',
                content: [
                  { type: 'text', text: 'What is in this picture?' },
                  { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
                ],
              },
            ],
          },
        },
        audioOutput: {
          summary:
            'Audio output: for models whose price declares audioOutputPer1k (the answer carries message.audio; audio tokens billed at that price)',
          value: {
            model: 'vendor-gpt-4',
            modalities: ['text', 'audio'],
            audio: { voice: 'alloy', format: 'wav' },
            messages: [{ role: 'user', content: 'Say hello in French.' }],
          },
        },
        webSearch: {
          summary:
            'Web search: for models whose price declares webSearchPerCall (billed once per call on top of the tokens)',
          value: {
            model: 'vendor-gpt-4',
            web_search_options: { search_context_size: 'low' },
            messages: [{ role: 'user', content: 'What happened in tech news today?' }],
          },
        },
      },
    }),
    ApiOkResponse({
      type: ChatCompletionResponse,
      description: 'The completion (or, when `stream` is true, the event stream of `ChatCompletionChunkDoc` events)',
    }),
    ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true }),
  );

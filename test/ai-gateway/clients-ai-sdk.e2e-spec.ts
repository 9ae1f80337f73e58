// The Vercel AI SDK (ai 5) drives the gateway: generateText / streamText with a tool and
// stopWhen, so the SDK runs the tool and calls the model again with its result. Two providers: the
// chat-completions one (@ai-sdk/openai-compatible) and the default `openai(model)` of @ai-sdk/openai,
// which speaks the Responses API (/v1/responses) with its defaults (store unset: the SDK may refer to
// earlier output items by id). Each on an OpenAI-protocol and an Anthropic-protocol upstream.
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, LanguageModel, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { tinyPng } from '../support/png';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';
import {
  expectBilled,
  expectUpstreamToolRoundTrip,
  makeWeatherTool,
  MARKER,
  MODELS,
  QUESTION,
  resetUpstreams,
  TOOL_DESCRIPTION,
  TOOL_NAME,
  UpstreamKind,
} from './clients-support';

type ProviderName = 'openai-compatible (chat completions)' | 'openai default (Responses API)';
const PROVIDERS: ProviderName[] = ['openai-compatible (chat completions)', 'openai default (Responses API)'];

function toolsFor(weather: ReturnType<typeof makeWeatherTool>) {
  return {
    [TOOL_NAME]: tool({
      description: TOOL_DESCRIPTION,
      inputSchema: z.object({ city: z.string().describe('City name').optional() }),
      execute: async (input) => JSON.parse(weather.run(input)),
    }),
  };
}

describe('real client: Vercel AI SDK through the gateway', () => {
  let f: GatewayFixture;

  const modelFor = (provider: ProviderName, key: string, model: string): LanguageModel => {
    const baseURL = `${f.gw.url}/v1`;
    if (provider === 'openai default (Responses API)') return createOpenAI({ baseURL, apiKey: key })(model);
    return createOpenAICompatible({ name: 'gateway', baseURL, apiKey: key, includeUsage: true })(model);
  };

  beforeAll(async () => {
    f = await startGatewayFixture();
  });
  afterAll(() => f?.close());
  beforeEach(() => resetUpstreams(f));

  describe.each(PROVIDERS.flatMap((p) => (['openai', 'anthropic'] as UpstreamKind[]).map((k) => [p, k] as const)))(
    '%s, %s upstream',
    (provider, kind) => {
      const modelName = MODELS[kind];

      it('generateText with a tool and stopWhen: two steps, the answer carries the tool result', async () => {
        const { id, key } = await f.createKey({ name: 'ai-sdk' });
        const weather = makeWeatherTool();
        const result = await generateText({
          model: modelFor(provider, key, modelName),
          tools: toolsFor(weather),
          stopWhen: stepCountIs(4),
          prompt: QUESTION,
          maxRetries: 0,
        });
        expect(result.steps).toHaveLength(2);
        expect(result.steps[0].finishReason).toBe('tool-calls');
        expect(result.steps[0].toolCalls).toEqual([expect.objectContaining({ toolName: TOOL_NAME })]);
        expect(result.steps[0].toolResults).toEqual([
          expect.objectContaining({ toolName: TOOL_NAME, output: expect.objectContaining({ code: MARKER }) }),
        ]);
        expect(result.finishReason).toBe('stop');
        expect(result.text).toContain(MARKER);
        expect(weather.calls).toHaveLength(1);
        expect(result.totalUsage.inputTokens).toBeGreaterThan(0);
        expectUpstreamToolRoundTrip(f, kind);
        await expectBilled(f, id, 2, modelName);
      });

      it('streamText with a tool and stopWhen: streamed tool input, tool result, then the streamed answer', async () => {
        const { id, key } = await f.createKey({ name: 'ai-sdk-stream' });
        const weather = makeWeatherTool();
        const errors: unknown[] = [];
        const result = streamText({
          model: modelFor(provider, key, modelName),
          tools: toolsFor(weather),
          stopWhen: stepCountIs(4),
          prompt: QUESTION,
          maxRetries: 0,
          onError: ({ error }) => void errors.push(error),
        });
        const parts: string[] = [];
        let text = '';
        for await (const part of result.fullStream) {
          parts.push(part.type);
          if (part.type === 'text-delta') text += part.text;
          if (part.type === 'error') errors.push(part.error);
        }
        expect(errors).toEqual([]);
        expect(parts).toContain('tool-input-start');
        expect(parts).toContain('tool-call');
        expect(parts).toContain('tool-result');
        expect(parts.indexOf('tool-result')).toBeLessThan(parts.lastIndexOf('text-delta'));
        const steps = await result.steps;
        expect(steps).toHaveLength(2);
        expect(steps[0].toolCalls).toEqual([expect.objectContaining({ toolName: TOOL_NAME })]);
        expect(text).toContain(MARKER);
        expect(await result.finishReason).toBe('stop');
        expect(weather.calls).toHaveLength(1);
        expect((await result.totalUsage).inputTokens).toBeGreaterThan(0);
        expectUpstreamToolRoundTrip(f, kind);
        await expectBilled(f, id, 2, modelName);
      });
    },
  );

  it.each(PROVIDERS)('%s: an image part reaches the Anthropic upstream as a base64 image block', async (provider) => {
    const { key } = await f.createKey({ name: 'ai-sdk-image' });
    const png = tinyPng();
    const result = await generateText({
      model: modelFor(provider, key, MODELS.anthropic),
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'describe this picture' },
            { type: 'image', image: png, mediaType: 'image/png' },
          ],
        },
      ],
      maxRetries: 0,
    });
    expect(result.text).toBe('Echo: describe this picture');
    const sent = f.anthropic.requests[0].body.messages[0];
    expect(sent.content).toEqual([
      expect.objectContaining({ type: 'text', text: 'describe this picture' }),
      expect.objectContaining({
        type: 'image',
        source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') },
      }),
    ]);
  });

  // Claude may ask for several tools in one turn: the SDK runs both and sends both results; the gateway
  // must hand them to Anthropic as tool_result blocks of one user turn (the fake refuses anything else).
  it.each<ProviderName>(['openai-compatible (chat completions)', 'openai default (Responses API)'])(
    '%s: two tool calls in one Anthropic turn, both results go back in one user turn',
    async (provider) => {
      f.anthropic.behaviour.parallelToolUse = 2;
      const { id, key } = await f.createKey({ name: 'ai-sdk-parallel' });
      const weather = makeWeatherTool();
      const clock: unknown[] = [];
      const tools = {
        ...toolsFor(weather),
        get_time: tool({
          description: 'Current local time for a city',
          inputSchema: z.object({ city: z.string().optional() }),
          execute: async (input) => {
            clock.push(input);
            return { time: '12:00', code: 'clock-K5521' };
          },
        }),
      };
      const providerOptions = provider === 'openai default (Responses API)' ? { openai: { store: false } } : undefined;
      const result = await generateText({
        model: modelFor(provider, key, MODELS.anthropic),
        tools,
        stopWhen: stepCountIs(4),
        prompt: QUESTION,
        maxRetries: 0,
        providerOptions,
      });
      expect(result.steps).toHaveLength(2);
      expect(result.steps[0].toolCalls.map((c) => c.toolName).sort()).toEqual(['get_time', TOOL_NAME]);
      expect(weather.calls).toHaveLength(1);
      expect(clock).toHaveLength(1);
      expect(result.text).toContain(MARKER);
      expect(result.text).toContain('clock-K5521');
      const second = f.anthropic.requests[1].body.messages;
      const lastUser = second[second.length - 1];
      expect(lastUser.role).toBe('user');
      expect(lastUser.content.filter((b: any) => b.type === 'tool_result')).toHaveLength(2);
      await expectBilled(f, id, 2, MODELS.anthropic);
    },
  );

  // With store left at its default (true) the SDK sends the model's earlier output items back as
  // `item_reference`s by id; with store: false it resends them in full. Both must work.
  it.each<UpstreamKind>(['openai', 'anthropic'])(
    'openai default (Responses API) with providerOptions.openai.store=false: generateText tool loop, %s upstream',
    async (kind) => {
      const modelName = MODELS[kind];
      const { id, key } = await f.createKey({ name: 'ai-sdk-nostore' });
      const weather = makeWeatherTool();
      const result = await generateText({
        model: modelFor('openai default (Responses API)', key, modelName),
        tools: toolsFor(weather),
        stopWhen: stepCountIs(4),
        prompt: QUESTION,
        maxRetries: 0,
        providerOptions: { openai: { store: false } },
      });
      expect(result.steps).toHaveLength(2);
      expect(result.steps[0].toolCalls).toEqual([expect.objectContaining({ toolName: TOOL_NAME })]);
      expect(result.text).toContain(MARKER);
      expect(weather.calls).toHaveLength(1);
      expectUpstreamToolRoundTrip(f, kind);
      await expectBilled(f, id, 2, modelName);
    },
  );
});

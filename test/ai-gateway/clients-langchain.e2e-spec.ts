// LangChain JS (@langchain/openai ChatOpenAI) drives the gateway: bindTools, an AIMessage with
// tool_calls, the tool run by LangChain answering a ToolMessage, and the final answer; invoked and
// streamed, on an OpenAI-protocol and an Anthropic-protocol upstream.
import { AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
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

function weatherTool(weather: ReturnType<typeof makeWeatherTool>) {
  return tool(async (input) => weather.run(input), {
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    schema: z.object({ city: z.string().describe('City name').optional() }),
  });
}

describe('real client: LangChain ChatOpenAI through the gateway', () => {
  let f: GatewayFixture;
  const chat = (key: string, model: string) =>
    new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: `${f.gw.url}/v1` }, maxRetries: 0 });

  beforeAll(async () => {
    f = await startGatewayFixture();
  });
  afterAll(() => f?.close());
  beforeEach(() => resetUpstreams(f));

  describe.each<UpstreamKind>(['openai', 'anthropic'])('%s upstream', (kind) => {
    const model = MODELS[kind];

    it('bindTools + invoke: AIMessage with tool_calls, ToolMessage round trip, final answer', async () => {
      const { id, key } = await f.createKey({ name: 'langchain' });
      const weather = makeWeatherTool();
      const getWeather = weatherTool(weather);
      const llm = chat(key, model).bindTools([getWeather]);
      const messages: BaseMessage[] = [new HumanMessage(QUESTION)];
      const ai = (await llm.invoke(messages)) as AIMessage;
      expect(ai.tool_calls).toEqual([
        expect.objectContaining({ name: TOOL_NAME, id: expect.any(String), args: expect.any(Object) }),
      ]);
      expect(ai.usage_metadata?.input_tokens).toBeGreaterThan(0);
      messages.push(ai);
      const toolMessage = await getWeather.invoke(ai.tool_calls![0]);
      expect(toolMessage).toBeInstanceOf(ToolMessage);
      expect(toolMessage.tool_call_id).toBe(ai.tool_calls![0].id);
      messages.push(toolMessage);
      const final = (await llm.invoke(messages)) as AIMessage;
      expect(final.tool_calls ?? []).toEqual([]);
      expect(final.text).toContain(MARKER);
      expect(weather.calls).toHaveLength(1);
      expectUpstreamToolRoundTrip(f, kind);
      await expectBilled(f, id, 2, model);
    });

    it('bindTools + stream: tool call chunks concatenate to a call, ToolMessage round trip, streamed answer', async () => {
      const { id, key } = await f.createKey({ name: 'langchain-stream' });
      const weather = makeWeatherTool();
      const getWeather = weatherTool(weather);
      const llm = chat(key, model).bindTools([getWeather]);
      const messages: BaseMessage[] = [new HumanMessage(QUESTION)];
      let ai: AIMessageChunk | undefined;
      let chunksWithToolCallChunks = 0;
      for await (const chunk of await llm.stream(messages)) {
        if (chunk.tool_call_chunks?.length) chunksWithToolCallChunks++;
        ai = ai ? ai.concat(chunk) : chunk;
      }
      expect(chunksWithToolCallChunks).toBeGreaterThanOrEqual(2);
      expect(ai!.tool_calls).toEqual([expect.objectContaining({ name: TOOL_NAME, id: expect.any(String) })]);
      messages.push(ai!);
      messages.push(
        new ToolMessage({ content: weather.run(ai!.tool_calls![0].args), tool_call_id: ai!.tool_calls![0].id! }),
      );
      let text = '';
      for await (const chunk of await llm.stream(messages)) text += chunk.text;
      expect(text).toContain(MARKER);
      expect(weather.calls).toHaveLength(1);
      expectUpstreamToolRoundTrip(f, kind);
      await expectBilled(f, id, 2, model);
    });

    it('useResponsesApi: bindTools + invoke round trip through /v1/responses', async () => {
      const { id, key } = await f.createKey({ name: 'langchain-responses' });
      const weather = makeWeatherTool();
      const getWeather = weatherTool(weather);
      const llm = new ChatOpenAI({
        model,
        apiKey: key,
        configuration: { baseURL: `${f.gw.url}/v1` },
        maxRetries: 0,
        useResponsesApi: true,
      }).bindTools([getWeather]);
      const messages: BaseMessage[] = [new HumanMessage(QUESTION)];
      const ai = (await llm.invoke(messages)) as AIMessage;
      expect(ai.tool_calls).toEqual([expect.objectContaining({ name: TOOL_NAME, id: expect.any(String) })]);
      messages.push(ai, await getWeather.invoke(ai.tool_calls![0]));
      const final = (await llm.invoke(messages)) as AIMessage;
      expect(final.text).toContain(MARKER);
      expect(weather.calls).toHaveLength(1);
      expectUpstreamToolRoundTrip(f, kind);
      await expectBilled(f, id, 2, model);
    });
  });
});

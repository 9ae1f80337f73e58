import { CreateChatCompletion } from '../chat/create-chat-completion.service';
import type { CallContext, EventStreamAnswer, JsonAnswer } from '../http/call-context';
import { Tokenizer } from '../tokenizer/tokenizer';
import type { CallOutcome } from '../usage/metering.service';
import { CreateResponse } from './create-response.service';
import { callContext, keyPrincipal, modelInfo } from '../../../../test/ai-gateway/use-case-fixtures';

// The use case over the real chat pipeline with an in-memory router, ledger and store: its answers are values.
describe('CreateResponse', () => {
  const info = modelInfo();
  const principal = keyPrincipal;
  const context = (): CallContext => callContext('req-3', 'responses');
  let settled: CallOutcome[];
  let saved: unknown[];
  let useCase: CreateResponse;

  beforeEach(() => {
    settled = [];
    saved = [];
    const router = {
      modelInfo: () => info,
      isServed: () => true,
      chat: async () => ({
        value: {
          id: 'c1',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: '你好' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
        },
        deployment: 'd1',
      }),
      chatStream: async () => {
        async function* chunks() {
          yield {
            id: 'c1',
            object: 'chat.completion.chunk',
            created: 1,
            model: 'm',
            choices: [{ index: 0, delta: { content: '你好' }, finish_reason: 'stop' }],
          };
          yield {
            id: 'c1',
            object: 'chat.completion.chunk',
            created: 1,
            model: 'm',
            choices: [],
            usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
          };
        }
        return { value: chunks(), deployment: 'd1' };
      },
    };
    const metering = {
      reserve: async () => ({ keyId: 'k1', admitted: null, settled: false, startedAt: 0 }),
      settle: async (_r: unknown, outcome: CallOutcome) => void settled.push(outcome),
    };
    const chat = new CreateChatCompletion(
      router as never,
      new Tokenizer(),
      metering as never,
      { AI_COMPLETION_RESERVE_TOKENS: 64 } as never,
    );
    const store = { enabled: true, save: async (_key: string, response: unknown) => (saved.push(response), true) };
    useCase = new CreateResponse(chat, store as never);
  });

  it('answers a Response object as a JSON value, stored before it is answered, settled under the responses endpoint', async () => {
    const answer = (await useCase.handle(
      principal,
      { model: 'm', input: 'Say hello in Chinese.' },
      context(),
    )) as JsonAnswer;
    expect(answer.kind).toBe('json');
    expect(answer.body).toMatchObject({
      object: 'response',
      status: 'completed',
      store: true,
      output: [{ type: 'message', content: [{ type: 'output_text', text: '你好' }] }],
      usage: { input_tokens: 5, output_tokens: 1 },
    });
    expect(saved).toEqual([expect.objectContaining({ id: (answer.body as { id: string }).id })]);
    await answer.settled;
    expect(settled).toEqual([expect.objectContaining({ endpoint: 'responses', status: 'ok', requestId: 'req-3' })]);
  });

  it('answers a stream as Responses events, settled before response.completed', async () => {
    const answer = (await useCase.handle(
      principal,
      { model: 'm', input: 'hi', stream: true, store: false },
      context(),
    )) as EventStreamAnswer;
    const types: string[] = [];
    for await (const event of answer.events) {
      const type = (event as { type: string }).type;
      if (type === 'response.completed') expect(settled).toHaveLength(1);
      types.push(type);
    }
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_text.delta');
    expect(types[types.length - 1]).toBe('response.completed');
    await expect(answer.settled).resolves.toBe('ok');
    expect(saved).toEqual([]);
  });
});

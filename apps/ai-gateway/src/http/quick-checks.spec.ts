import { openAiValidationPipe } from '../errors';
import { quickAcceptChat } from '../chat/chat-quick-accept';
import { validateChatRequestFully } from '../chat/chat-request.pipe';
import { EmbeddingsRequest } from '../embeddings/dtos/embeddings.dto';
import { quickAcceptEmbeddings } from '../embeddings/embeddings-quick-accept';

// Deterministic pseudo-random generator so a failure can be replayed.
function rng(seed: number) {
  return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
}

const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  1,
  -1,
  0.5,
  1.5,
  2,
  2.5,
  3,
  8,
  9,
  20,
  21,
  -2,
  -2.5,
  1e21,
  4096,
  8192,
  8193,
  '',
  'x',
  'user',
  'system',
  'assistant',
  'tool',
  'developer',
  'function',
  [{ type: 'text', text: 'hi' }],
  'a'.repeat(64),
  'a'.repeat(65),
  'a'.repeat(128),
  'a'.repeat(129),
  'a'.repeat(256),
  'a'.repeat(257),
  '😀'.repeat(40),
  [],
  ['a'],
  ['a', ''],
  [1],
  {},
  { include_usage: true },
  { include_usage: 'yes' },
  { other: 1 },
  [{ role: 'user', content: 'hi' }],
  'float',
  'base64',
  'text',
];
const CHAT_KEYS = [
  'model',
  'messages',
  'temperature',
  'max_tokens',
  'max_completion_tokens',
  'stream',
  'stream_options',
  'top_p',
  'frequency_penalty',
  'presence_penalty',
  'n',
  'stop',
  'seed',
  'user',
  'logprobs',
  'top_logprobs',
  'unknown',
  '__proto__',
  'constructor',
];
const MESSAGE_KEYS = ['role', 'content', 'name', 'extra', 'tool_calls', 'tool_call_id'];
const EMB_KEYS = ['model', 'input', 'encoding_format', 'dimensions', 'user', 'unknown', 'constructor'];

async function pipeAccepts(metatype: any, body: unknown): Promise<boolean> {
  try {
    await openAiValidationPipe().transform(body, { type: 'body', metatype, data: undefined });
    return true;
  } catch {
    return false;
  }
}

async function chatAccepts(body: unknown): Promise<boolean> {
  try {
    await validateChatRequestFully(body);
    return true;
  } catch {
    return false;
  }
}

function mutate(base: any, keys: string[], r: () => number, nested?: (m: any) => any): any {
  const body = JSON.parse(JSON.stringify(base));
  const times = 1 + Math.floor(r() * 3);
  for (let i = 0; i < times; i++) {
    const k = keys[Math.floor(r() * keys.length)];
    const roll = r();
    if (roll < 0.2) delete body[k];
    else if (
      roll < 0.35 &&
      nested &&
      Array.isArray(body.messages) &&
      typeof body.messages[0] === 'object' &&
      body.messages[0] !== null
    )
      body.messages[0] = nested(body.messages[0]);
    else body[k] = VALUES[Math.floor(r() * VALUES.length)];
  }
  // Through JSON, as bodies arrive (own __proto__ keys included).
  return JSON.parse(JSON.stringify(body).replace('"constructor"', '"__proto__"'));
}

describe('quick acceptors', () => {
  it('accept common valid requests', () => {
    expect(quickAcceptChat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).toBe(true);
    expect(
      quickAcceptChat({
        model: 'm',
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 10,
        temperature: 0.7,
        messages: [
          { role: 'system', content: '' },
          { role: 'user', content: 'hi', name: 'bob' },
        ],
      }),
    ).toBe(true);
    expect(quickAcceptEmbeddings({ model: 'e', input: ['a', 'b'], encoding_format: 'base64', dimensions: 256 })).toBe(
      true,
    );
    expect(
      quickAcceptChat(
        JSON.parse('{"model":"m","messages":[{"role":"user","content":"x"}],"__proto__":{"admin":true}}'),
      ),
    ).toBe(false);
  });

  it('never accept a chat body the validation pipe refuses (2000 generated bodies)', async () => {
    const r = rng(42);
    const base = {
      model: 'vendor-gpt-4',
      messages: [{ role: 'user', content: 'Hello' }],
      temperature: 1,
      max_tokens: 5,
      stream: false,
    };
    let accepted = 0;
    for (let i = 0; i < 2000; i++) {
      const body = mutate(base, CHAT_KEYS, r, (m) => mutate(m, MESSAGE_KEYS, r));
      if (!quickAcceptChat(body)) continue;
      accepted++;
      if (!(await chatAccepts(body)))
        throw new Error(`quick-accepted but refused by the pipe: ${JSON.stringify(body)}`);
    }
    expect(accepted).toBeGreaterThan(100);
  });

  it('never accept an embeddings body the validation pipe refuses (1000 generated bodies)', async () => {
    const r = rng(7);
    const base = { model: 'text-embedding-v3', input: ['a', 'b'], dimensions: 8 };
    let accepted = 0;
    for (let i = 0; i < 1000; i++) {
      const body = mutate(base, EMB_KEYS, r);
      if (!quickAcceptEmbeddings(body)) continue;
      accepted++;
      if (!(await pipeAccepts(EmbeddingsRequest, body)))
        throw new Error(`quick-accepted but refused by the pipe: ${JSON.stringify(body)}`);
    }
    expect(accepted).toBeGreaterThan(50);
  });
});

/**
 * Newer chat request fields the gateway does not know (`moderation`, `prompt_cache_options`,
 * `context_management`, in OpenAI's spec of 2026) follow each deployment's `unknownFields` policy
 * (docs/ai-gateway/chat.md): forwarded to OpenAI-type deployments by default, dropped for
 * `unknownFields: drop`, never sent in the Anthropic translation; the call is answered in each case.
 */
import OpenAI from 'openai';
import { GatewayFixture, providersDoc, startGatewayFixture } from './gateway-fixture';

const NEWER = {
  moderation: { mode: 'block' },
  prompt_cache_options: { retention: '24h' },
  context_management: [{ type: 'compaction', compact_threshold: 0.8 }],
};

describe('chat: unknown newer fields follow the deployment policy', () => {
  let f: GatewayFixture;
  let client: OpenAI;

  beforeAll(async () => {
    f = await startGatewayFixture({}, ({ openai, backup, anthropic }) => {
      const doc = providersDoc(openai, backup, anthropic) as any;
      const b = doc.deployments.find((d: any) => d.name === 'backup');
      Object.assign(b, { weight: 1, unknownFields: 'drop' });
      return doc;
    });
    client = new OpenAI({ apiKey: (await f.createKey()).key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => f?.close());
  beforeEach(() => {
    f.openai.reset();
    f.openaiBackup.reset();
    f.anthropic.reset();
  });

  const ask = (model: string) =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], ...NEWER } as any);

  it('forwards them as sent to an OpenAI-type deployment (default policy)', async () => {
    const res = await ask('vendor-gpt-4');
    expect(res.choices[0].message.content).toBe('Echo: hi');
    expect(f.openai.requests[0].body).toMatchObject(NEWER);
  });

  it('drops them for a deployment with unknownFields: drop', async () => {
    await ask('vendor-llama-70b');
    const sent = f.openaiBackup.requests[0].body;
    for (const k of Object.keys(NEWER)) expect(sent).not.toHaveProperty(k);
  });

  it('never sends them to Anthropic', async () => {
    await ask('vendor-claude-3');
    const sent = f.anthropic.requests[0].body;
    for (const k of Object.keys(NEWER)) expect(sent).not.toHaveProperty(k);
  });
});

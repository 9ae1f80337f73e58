import { LlmRouter, parseProvidersConfig } from '@app/llm';
import { LOCAL_EMBEDDINGS_ENGINE, LocalEmbeddingsClient, localLlmEngines } from './local-embeddings.client';
import { TextEmbeddingEngine } from './text-embedding.engine';
import { EngineBusyError } from '../engine-limiter';

describe('LocalEmbeddingsClient behind the router (type: local)', () => {
  const config = parseProvidersConfig({
    models: { 'local-use-lite-en': { kind: 'embeddings', dimensions: 512 } },
    deployments: [
      { name: 'in-process', type: 'local', engine: LOCAL_EMBEDDINGS_ENGINE, models: ['local-use-lite-en'] },
    ],
  });
  const router = new LlmRouter(config, { localEngines: localLlmEngines() });
  afterAll(async () => {
    await router.close();
    await TextEmbeddingEngine.shared().close();
  });

  it('serves embeddings from the in-process engine', async () => {
    const routed = await router.embeddings({ model: 'local-use-lite-en', input: ['hello world', 'good morning'] });
    expect(routed.value.model).toBe('local-use-lite-en');
    expect(routed.value.data.map((d: any) => [d.index, d.embedding.length])).toEqual([
      [0, 512],
      [1, 512],
    ]);
  });

  it('refuses other dimensions and chat', async () => {
    await expect(router.embeddings({ model: 'local-use-lite-en', input: 'x', dimensions: 256 })).rejects.toMatchObject({
      status: 400,
    });
    await expect(localLlmEngines()[LOCAL_EMBEDDINGS_ENGINE].chat({ model: 'x', messages: [] })).rejects.toMatchObject({
      status: 400,
    });
  });
  it("runs the work under the calling key's engine share (AI_ENGINE_MAX_CONCURRENT_PER_KEY), not only the process-wide caps", async () => {
    const calls: unknown[] = [];
    const engine = { embed: async (texts: string[], call: unknown) => (calls.push(call), texts.map(() => [0.5])) };
    const client = new LocalEmbeddingsClient(engine as unknown as TextEmbeddingEngine);
    const signal = new AbortController().signal;
    await client.embeddings({ model: 'm', input: ['a', 'b'] }, { key: 'key-1', signal });
    expect(calls).toEqual([{ key: 'key-1', signal }]);
  });
  it("answers a key that used up its engine share with that key's error, not as a busy deployment (no cooldown for every tenant)", async () => {
    const busy = (scope: 'key' | 'server') =>
      ({
        embed: async () => Promise.reject(new EngineBusyError(scope, `${scope} busy`)),
      }) as unknown as TextEmbeddingEngine;
    await expect(
      new LocalEmbeddingsClient(busy('key')).embeddings({ model: 'm', input: ['a'] }, { key: 'k' }),
    ).rejects.toBeInstanceOf(EngineBusyError);
    await expect(
      new LocalEmbeddingsClient(busy('server')).embeddings({ model: 'm', input: ['a'] }, { key: 'k' }),
    ).rejects.toMatchObject({ status: 503, retryable: true, upstreamError: { code: 'engine_busy' } });
  });
});

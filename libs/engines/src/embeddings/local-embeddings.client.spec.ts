import { LlmRouter, parseProvidersConfig } from '@app/llm';
import { LOCAL_EMBEDDINGS_ENGINE, localLlmEngines } from './local-embeddings.client';
import { TextEmbeddingEngine } from './text-embedding.engine';

describe('LocalEmbeddingsClient behind the router (type: local)', () => {
  const config = parseProvidersConfig({
    models: { 'local-use-lite-en': { kind: 'embeddings', dimensions: 512 } },
    deployments: [{ name: 'in-process', type: 'local', engine: LOCAL_EMBEDDINGS_ENGINE, models: ['local-use-lite-en'] }],
  });
  const router = new LlmRouter(config, { localEngines: localLlmEngines() });
  afterAll(async () => {
    await router.close();
    await TextEmbeddingEngine.shared().close();
  });

  it('serves embeddings from the in-process engine', async () => {
    const routed = await router.embeddings({ model: 'local-use-lite-en', input: ['hello world', 'good morning'] });
    expect(routed.value.model).toBe('local-use-lite-en');
    expect(routed.value.data.map((d: any) => [d.index, d.embedding.length])).toEqual([[0, 512], [1, 512]]);
  });

  it('refuses other dimensions and chat', async () => {
    await expect(router.embeddings({ model: 'local-use-lite-en', input: 'x', dimensions: 256 })).rejects.toMatchObject({ status: 400 });
    await expect(localLlmEngines()[LOCAL_EMBEDDINGS_ENGINE].chat({ model: 'x', messages: [] })).rejects.toMatchObject({ status: 400 });
  });
});

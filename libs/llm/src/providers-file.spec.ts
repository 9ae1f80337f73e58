import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { loadProvidersFile, parseProvidersConfig, ProvidersFileError } from './providers-file';

describe('providers file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'providers-'));

  it('loads YAML with keys from the environment, upstream names, weights and model overrides', () => {
    const file = join(dir, 'providers.yaml');
    writeFileSync(
      file,
      `
routing: { maxAttempts: 4, cooldownMs: 1000 }
models:
  vendor-gpt-4: { price: { inputPer1k: 0.01, outputPer1k: 0.03 } }
  qwen-plus: { kind: chat, contextLength: 131072 }
deployments:
  - name: dashscope
    type: openai
    baseUrl: https://dashscope.aliyuncs.com/compatible-mode/v1/
    apiKeyEnv: DASHSCOPE_API_KEY
    weight: 3
    models:
      - { name: vendor-gpt-4, upstream: qwen-max }
      - qwen-plus
  - name: claude
    type: anthropic
    baseUrl: https://api.anthropic.com/v1
    apiKeyEnv: ANTHROPIC_API_KEY
    models: [{ name: vendor-claude-3, upstream: claude-3-5-sonnet-latest }]
`,
    );
    const cfg = loadProvidersFile(file, { DASHSCOPE_API_KEY: 'sk-ds', ANTHROPIC_API_KEY: 'sk-ant' });
    expect(cfg.routing).toMatchObject({ maxAttempts: 4, cooldownMs: 1000, backoffMs: 200 });
    expect(cfg.deployments[0]).toMatchObject({
      name: 'dashscope',
      baseUrl: 'https://dashscope.aliyuncs.com/compatible-mode/v1',
      apiKey: 'sk-ds',
      weight: 3,
      models: [
        { name: 'vendor-gpt-4', upstream: 'qwen-max' },
        { name: 'qwen-plus', upstream: 'qwen-plus' },
      ],
    });
    expect(cfg.deployments[1]).toMatchObject({
      type: 'anthropic',
      apiKey: 'sk-ant',
      anthropicVersion: '2023-06-01',
      weight: 1,
    });
    expect(cfg.models['vendor-gpt-4'].price).toEqual({ inputPer1k: 0.01, outputPer1k: 0.03 });
    expect(cfg.models['vendor-gpt-4'].contextLength).toBe(128000);
    expect(cfg.models['qwen-plus']).toMatchObject({ kind: 'chat', contextLength: 131072 });
    expect(cfg.models['text-embedding-v3'].price.inputPer1k).toBe(0.0001);
  });

  it('reads the optional chat prices (audio tokens, web search calls), for chat models only', () => {
    const cfg = parseProvidersConfig({
      models: {
        'vendor-gpt-4': {
          price: { inputPer1k: 1, outputPer1k: 2, audioInputPer1k: 4, audioOutputPer1k: 20, webSearchPerCall: 0.5 },
        },
      },
    });
    expect(cfg.models['vendor-gpt-4'].price).toEqual({
      inputPer1k: 1,
      outputPer1k: 2,
      audioInputPer1k: 4,
      audioOutputPer1k: 20,
      webSearchPerCall: 0.5,
    });
    expect(
      parseProvidersConfig({ models: { 'vendor-gpt-4-mini': { price: { inputPer1k: 1 } } } }).models[
        'vendor-gpt-4-mini'
      ].price,
    ).toEqual({ inputPer1k: 1, outputPer1k: 0 });
    expect(() => parseProvidersConfig({ models: { 'vendor-gpt-4': { price: { webSearchPerCall: -1 } } } })).toThrow(
      'models.vendor-gpt-4.price.webSearchPerCall must be a number >= 0',
    );
    expect(() => parseProvidersConfig({ models: { 'text-embedding-v3': { price: { audioOutputPer1k: 1 } } } })).toThrow(
      'models.text-embedding-v3.price.audioOutputPer1k is for chat models only',
    );
  });

  it('expands ${VAR} in base URLs and headers from the environment', () => {
    const cfg = parseProvidersConfig(
      {
        deployments: [
          {
            name: 'vllm',
            type: 'openai',
            baseUrl: 'http://${VLLM_HOST}:8000/v1',
            headers: { 'x-tenant': '${TENANT}' },
            models: ['vendor-llama-70b'],
          },
        ],
      },
      { VLLM_HOST: '10.1.2.3', TENANT: 'acme' },
    );
    expect(cfg.deployments[0]).toMatchObject({
      baseUrl: 'http://10.1.2.3:8000/v1',
      headers: { 'x-tenant': 'acme' },
      streamUsage: true,
    });
    expect(() =>
      parseProvidersConfig(
        { deployments: [{ name: 'v', type: 'openai', baseUrl: 'http://${NOPE}/v1', models: ['vendor-llama-70b'] }] },
        {},
      ),
    ).toThrow('NOPE is not set');
  });

  it('takes a variable named like an Object.prototype member as unset, in the process environment too', () => {
    for (const env of [{}, process.env]) {
      for (const name of ['constructor', 'toString', 'valueOf']) {
        expect(() =>
          parseProvidersConfig(
            {
              deployments: [
                { name: 'v', type: 'openai', baseUrl: `http://\${${name}}/v1`, models: ['vendor-llama-70b'] },
              ],
            },
            env,
          ),
        ).toThrow(`environment variable ${name} is not set`);
        expect(() =>
          parseProvidersConfig(
            {
              deployments: [
                { name: 'v', type: 'openai', baseUrl: 'http://x/v1', apiKeyEnv: name, models: ['vendor-llama-70b'] },
              ],
            },
            env,
          ),
        ).toThrow(`environment variable ${name} is not set`);
      }
    }
  });

  it('picks the completion-limit field an OpenAI-type upstream honours: OpenAI and Azure max_completion_tokens, others max_tokens, or as configured', () => {
    const dep = (baseUrl: string, extra: Record<string, unknown> = {}) =>
      parseProvidersConfig(
        { deployments: [{ name: 'd', type: 'openai', baseUrl, models: ['vendor-gpt-4'], ...extra }] },
        {},
      ).deployments[0].completionLimitParam;
    expect(dep('https://api.openai.com/v1')).toBe('max_completion_tokens');
    expect(dep('https://acme.openai.azure.com/openai/v1')).toBe('max_completion_tokens');
    expect(dep('https://api.deepseek.com/v1')).toBe('max_tokens');
    expect(dep('http://127.0.0.1:8000/v1')).toBe('max_tokens');
    expect(dep('http://127.0.0.1:8000/v1', { completionLimitParam: 'max_completion_tokens' })).toBe(
      'max_completion_tokens',
    );
    expect(() => dep('http://127.0.0.1:8000/v1', { completionLimitParam: 'both' })).toThrow(
      'deployments[0].completionLimitParam must be max_tokens or max_completion_tokens',
    );
  });

  it('reads embeddingsEncoding per deployment: base64 for OpenAI hosts, float elsewhere, anything else refused', () => {
    const dep = (baseUrl: string, extra: Record<string, unknown> = {}) =>
      parseProvidersConfig(
        { deployments: [{ name: 'd', type: 'openai', baseUrl, models: ['text-embedding-v3'], ...extra }] },
        {},
      ).deployments[0].embeddingsEncoding;
    expect(dep('https://api.openai.com/v1')).toBe('base64');
    expect(dep('https://acme.openai.azure.com/openai/v1')).toBe('base64');
    expect(dep('https://dashscope.aliyuncs.com/compatible-mode/v1')).toBe('float');
    expect(dep('http://127.0.0.1:8000/v1', { embeddingsEncoding: 'base64' })).toBe('base64');
    expect(dep('https://api.openai.com/v1', { embeddingsEncoding: 'float' })).toBe('float');
    expect(() => dep('http://127.0.0.1:8000/v1', { embeddingsEncoding: 'binary' })).toThrow(
      'deployments[0].embeddingsEncoding must be one of float, base64',
    );
  });

  it('reads unknownFields per deployment: forward by default, drop when configured, anything else refused', () => {
    const dep = (extra: Record<string, unknown> = {}) =>
      parseProvidersConfig(
        {
          deployments: [
            { name: 'd', type: 'openai', baseUrl: 'http://127.0.0.1:8000/v1', models: ['vendor-gpt-4'], ...extra },
          ],
        },
        {},
      ).deployments[0].unknownFields;
    expect(dep()).toBe('forward');
    expect(dep({ unknownFields: 'drop' })).toBe('drop');
    expect(() => dep({ unknownFields: 'strip' })).toThrow('deployments[0].unknownFields must be one of forward, drop');
  });

  it("reads a chat model's image price in prompt tokens (imageTokens: base, tile)", () => {
    const models = parseProvidersConfig(
      { models: { 'vendor-gpt-4-mini': { imageTokens: { base: 2833, tile: 5667 } } } },
      {},
    ).models;
    expect(models['vendor-gpt-4-mini'].imageTokens).toEqual({ base: 2833, tile: 5667 });
    expect(models['vendor-gpt-4'].imageTokens).toBeUndefined();
    expect(() =>
      parseProvidersConfig({ models: { 'vendor-gpt-4': { imageTokens: { base: -1, tile: 1 } } } }, {}),
    ).toThrow('models.vendor-gpt-4.imageTokens.base must be a number >= 0');
  });

  it('loads JSON', () => {
    const file = join(dir, 'p.json');
    writeFileSync(
      file,
      JSON.stringify({
        deployments: [
          { name: 'local-ollama', type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', models: ['vendor-llama-70b'] },
        ],
      }),
    );
    expect(loadProvidersFile(file, {}).deployments[0].apiKey).toBeUndefined();
  });

  it.each([
    [
      { deployments: [{ name: 'a', type: 'grpc', baseUrl: 'http://x', models: ['vendor-gpt-4'] }] },
      'deployments[0].type must be one of openai, anthropic, local',
    ],
    [
      { deployments: [{ name: 'a', type: 'openai', baseUrl: 'ftp://x', models: ['vendor-gpt-4'] }] },
      'deployments[0].baseUrl must be an http(s) URL',
    ],
    [
      { deployments: [{ name: 'a', type: 'openai', baseUrl: 'http://x', models: [] }] },
      'deployments[0].models must be a non-empty list',
    ],
    [
      { deployments: [{ name: 'a', type: 'openai', baseUrl: 'http://x', models: ['nope'] }] },
      'model "nope" is not in the catalog',
    ],
    [
      {
        deployments: [
          { name: 'a', type: 'openai', baseUrl: 'http://x', apiKeyEnv: 'MISSING_KEY', models: ['vendor-gpt-4'] },
        ],
      },
      'MISSING_KEY is not set',
    ],
    [
      {
        deployments: [
          { name: 'a', type: 'openai', baseUrl: 'http://x', apiKey: 'sk-inline', models: ['vendor-gpt-4'] },
        ],
      },
      'put keys in the environment',
    ],
    [{ routing: { maxAttempts: 0 } }, 'routing.maxAttempts must be a number >= 1'],
    [{ models: { m: { kind: 'image' } } }, 'models.m.kind must be chat or embeddings'],
    [
      { deployments: [{ name: 'a', type: 'openai', baseUrl: 'http://x', models: ['constructor'] }] },
      'model "constructor" is not in the catalog',
    ],
    [
      { deployments: [{ name: 'a', type: 'openai', baseUrl: 'http://x', models: ['toString'] }] },
      'model "toString" is not in the catalog',
    ],
  ])('rejects %j', (doc, message) => {
    expect(() => parseProvidersConfig(doc, {})).toThrow(ProvidersFileError);
    expect(() => parseProvidersConfig(doc, {})).toThrow(message);
  });

  it('declares a model named __proto__ as an ordinary catalog entry (JSON and YAML), leaving the others alone', () => {
    const json = parseProvidersConfig(
      JSON.parse(
        '{"models":{"__proto__":{"kind":"chat","contextLength":1000}},"deployments":[{"name":"a","type":"openai","baseUrl":"http://x","models":["__proto__"]}]}',
      ),
      {},
    );
    expect(Object.hasOwn(json.models, '__proto__')).toBe(true);
    expect(json.models['__proto__']).toMatchObject({ name: '__proto__', kind: 'chat', contextLength: 1000 });
    expect(json.models['vendor-gpt-4']).toMatchObject({ kind: 'chat' });
    expect(json.models['kind' as string]).toBeUndefined();
    const file = join(dir, 'proto.yaml');
    writeFileSync(file, 'models:\n  __proto__: { kind: embeddings }\ndeployments: []\n');
    expect(loadProvidersFile(file, {}).models['__proto__']).toMatchObject({ name: '__proto__', kind: 'embeddings' });
  });

  it('reports a YAML syntax error with the file name', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'deployments: [\n');
    expect(() => loadProvidersFile(file, {})).toThrow(/bad\.yaml is not valid YAML/);
  });
});

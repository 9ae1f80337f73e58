// Boots the real gateway against fake OpenAI/Anthropic upstreams with a generated providers file.
import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { Clock } from '@app/platform';
import { RunningApp, startGateway } from '../support/apps';
import { FakeUpstream, startFakeAnthropic, startFakeOpenAi } from '../support/upstreams';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface GatewayFixture {
  gw: RunningApp;
  openai: FakeUpstream;
  openaiBackup: FakeUpstream;
  anthropic: FakeUpstream;
  providersFile: string;
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }>;
  createKey(fields?: Record<string, unknown>): Promise<{ id: string; key: string; [k: string]: any }>;
  close(): Promise<void>;
}

/** Prices chosen so small calls cost visible amounts: 1 yuan per 1000 tokens in, 2 out. */
export function providersDoc(
  openai: FakeUpstream,
  backup: FakeUpstream,
  anthropic: FakeUpstream,
  routing: Record<string, unknown> = {},
) {
  return {
    routing: { maxAttempts: 3, backoffMs: 20, cooldownMs: 200, maxRetryAfterMs: 3000, ...routing },
    models: {
      'vendor-gpt-4': { price: { inputPer1k: 1, outputPer1k: 2 } },
      'vendor-gpt-4-mini': { price: { inputPer1k: 1, outputPer1k: 2 } },
      'vendor-claude-3': { price: { inputPer1k: 1, outputPer1k: 2 } },
      'text-embedding-v3': { price: { inputPer1k: 1, outputPer1k: 0 } },
    },
    deployments: [
      {
        name: 'primary',
        type: 'openai',
        baseUrl: openai.url,
        apiKeyEnv: 'FAKE_OPENAI_KEY',
        timeoutMs: 1500,
        models: [
          { name: 'vendor-gpt-4', upstream: 'gpt-4o' },
          { name: 'vendor-gpt-4-mini', upstream: 'gpt-4o-mini' },
          'text-embedding-v3',
          'text-embedding-v3-small',
        ],
      },
      { name: 'backup', type: 'openai', baseUrl: backup.url, weight: 0, timeoutMs: 1500, models: ['vendor-llama-70b'] },
      {
        name: 'claude',
        type: 'anthropic',
        baseUrl: anthropic.url,
        apiKeyEnv: 'FAKE_ANTHROPIC_KEY',
        timeoutMs: 1500,
        models: [{ name: 'vendor-claude-3', upstream: 'claude-3-5-sonnet-latest' }],
      },
    ],
  };
}

export async function startGatewayFixture(
  env: Record<string, string> = {},
  doc?: (f: { openai: FakeUpstream; backup: FakeUpstream; anthropic: FakeUpstream }) => unknown,
  opts: { clock?: Clock } = {},
): Promise<GatewayFixture> {
  const [openai, openaiBackup, anthropic] = await Promise.all([
    startFakeOpenAi(),
    startFakeOpenAi(),
    startFakeAnthropic(),
  ]);
  openai.behaviour.apiKey = 'sk-upstream-openai';
  anthropic.behaviour.apiKey = 'sk-upstream-anthropic';
  const dir = mkdtempSync(join(tmpdir(), 'gw-providers-'));
  const providersFile = join(dir, 'providers.json');
  writeFileSync(
    providersFile,
    JSON.stringify(
      doc ? doc({ openai, backup: openaiBackup, anthropic }) : providersDoc(openai, openaiBackup, anthropic),
    ),
  );
  // Upstream keys are read from the process environment, as in production.
  process.env.FAKE_OPENAI_KEY = 'sk-upstream-openai';
  process.env.FAKE_ANTHROPIC_KEY = 'sk-upstream-anthropic';
  const gw = await startGateway(
    {
      AI_PROVIDERS_FILE: providersFile,
      ADMIN_TOKEN,
      AI_LEDGER_FLUSH_MS: '100',
      RATE_LIMIT_PER_MINUTE: '100000',
      ...env,
    },
    { clock: opts.clock },
  );
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };
  return {
    gw,
    openai,
    openaiBackup,
    anthropic,
    providersFile,
    admin,
    async createKey(fields = {}) {
      const res = await admin('POST', '/admin/keys', { name: 'test', ...fields });
      if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    async close() {
      await gw.close();
      await Promise.all([openai.close(), openaiBackup.close(), anthropic.close()]);
    },
  };
}

/** A function tool the fake upstreams call (test/support/upstreams: get_weather with the city from the prompt). */
export const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: false,
};

/** Forgets the fake upstreams' requests and behaviour between tests, keeping the API keys they check. */
export function resetUpstreams(f: GatewayFixture): void {
  for (const u of [f.openai, f.anthropic, f.openaiBackup]) {
    const apiKey = u.behaviour.apiKey;
    u.reset();
    u.behaviour.apiKey = apiKey;
  }
}

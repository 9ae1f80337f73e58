// Shared pieces of the real-client suites (clients-*.e2e-spec.ts): one tool the clients run, the checks
// of what the fake upstreams saw in a two-step tool loop, and the ledger read for a key.
import { Client } from 'pg';
import { GatewayFixture } from './gateway-fixture';

/** The tool's answer carries this marker: the final text can only contain it if the tool result went round. */
export const MARKER = 'forecast-W7731';
export const TOOL_NAME = 'get_weather';
export const TOOL_DESCRIPTION = 'Current weather for a city';
/** JSON Schema of the tool's arguments. The fakes choose the arguments, so nothing is required. */
export const TOOL_PARAMETERS = {
  type: 'object',
  properties: { city: { type: 'string', description: 'City name' } },
  additionalProperties: false,
};
export const QUESTION = 'What is the weather in Paris? Use the tool.';

/** Runs the tool (counts its calls so a test can assert the client ran it exactly once). */
export function makeWeatherTool() {
  const calls: unknown[] = [];
  return {
    calls,
    run(args: unknown): string {
      calls.push(args);
      const city =
        args && typeof args === 'object' && typeof (args as any).city === 'string' ? (args as any).city : 'Paris';
      return JSON.stringify({ city, forecast: 'sunny', code: MARKER });
    },
  };
}

export type UpstreamKind = 'openai' | 'anthropic';
export const MODELS: Record<UpstreamKind, string> = { openai: 'vendor-gpt-4', anthropic: 'vendor-claude-3' };

export { resetUpstreams } from './gateway-fixture';

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return JSON.stringify(content ?? '');
}

/**
 * What the upstream saw in a two-step tool loop: the first call offered the tool in its own protocol,
 * the second carried the model's tool call and the client's tool result (matched by id, holding the
 * tool's output). Returns the upstream calls so a caller can check more.
 */
export function expectUpstreamToolRoundTrip(f: GatewayFixture, kind: UpstreamKind): any[] {
  if (kind === 'openai') {
    const calls = f.openai.requests.filter((r) => r.path.split('?')[0] === '/v1/chat/completions').map((r) => r.body);
    expect(calls).toHaveLength(2);
    expect(calls[0].tools).toEqual([
      expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: TOOL_NAME }) }),
    ]);
    const assistant = calls[1].messages.find(
      (m: any) => m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0,
    );
    expect(assistant?.tool_calls[0]).toMatchObject({ type: 'function', function: { name: TOOL_NAME } });
    const tool = calls[1].messages.find((m: any) => m.role === 'tool');
    expect(tool?.tool_call_id).toBe(assistant.tool_calls[0].id);
    expect(textOf(tool.content)).toContain(MARKER);
    return calls;
  }
  const calls = f.anthropic.requests.filter((r) => r.path.split('?')[0] === '/v1/messages').map((r) => r.body);
  expect(calls).toHaveLength(2);
  expect(calls[0].tools).toEqual([
    expect.objectContaining({ name: TOOL_NAME, input_schema: expect.objectContaining({ type: 'object' }) }),
  ]);
  const blocks = (role: string) =>
    calls[1].messages.filter((m: any) => m.role === role && Array.isArray(m.content)).flatMap((m: any) => m.content);
  const use = blocks('assistant').find((b: any) => b.type === 'tool_use');
  expect(use).toMatchObject({ name: TOOL_NAME, id: expect.any(String), input: expect.any(Object) });
  const result = blocks('user').find((b: any) => b.type === 'tool_result');
  expect(result?.tool_use_id).toBe(use.id);
  expect(textOf(result.content)).toContain(MARKER);
  return calls;
}

export interface LedgerRow {
  endpoint: string;
  model: string;
  status: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
}

/** Waits for `count` ledger rows of a key (the ledger is written in batches); a write that never comes ends at Jest's timeout. */
export async function ledgerForKey(dbUrl: string, keyId: string, count: number): Promise<LedgerRow[]> {
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  try {
    for (;;) {
      const { rows } = await db.query<LedgerRow>(
        'select endpoint, model, status, prompt_tokens, completion_tokens, cost_yuan::float as cost from ai_usage_records where key_id = $1 order by id',
        [keyId],
      );
      if (rows.length >= count) return rows;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await db.end();
  }
}

/** Every call of the loop was billed: `calls` ok rows with tokens and a cost, and the key's spend is their sum. */
export async function expectBilled(f: GatewayFixture, keyId: string, calls: number, model: string): Promise<void> {
  const rows = await ledgerForKey(f.gw.dbUrl, keyId, calls);
  expect(rows).toHaveLength(calls);
  for (const row of rows) {
    expect(row).toMatchObject({ model, status: 'ok' });
    expect(row.prompt_tokens).toBeGreaterThan(0);
    expect(row.cost).toBeGreaterThan(0);
  }
  // Without a budget hold the charge is written while the answer goes out: wait for it (Jest's timeout ends a charge that never comes).
  const total = rows.reduce((s, r) => s + r.cost, 0);
  let key = (await f.admin('GET', `/admin/keys/${keyId}`)).body;
  while (key.spent_yuan < total - 1e-8 || key.reserved_yuan !== 0) {
    await new Promise((r) => setTimeout(r, 100));
    key = (await f.admin('GET', `/admin/keys/${keyId}`)).body;
  }
  expect(key.spent_yuan).toBeCloseTo(total, 8);
}

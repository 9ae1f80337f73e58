// Bad-input corpus for every operation of both apps, generated from their own /v3/api-docs with
// fast-check, anonymous and with a valid credential (so validation behind auth is reached too).
// Every answer must be a 4xx in the app's error shape (never a 5xx, never a hang); requests that
// are invalid beyond doubt must be a 4xx. HARDENING_RUNS sets cases per operation and mode.
import fc from 'fast-check';
import { RunningApp, startMembership } from '../support/apps';
import { startGatewayFixture, GatewayFixture, ADMIN_TOKEN } from '../ai-gateway/gateway-fixture';
import { BadCase, badCases, OpenApiDoc, operationsOf } from './support/openapi-corpus';
import { HangError, rawRequest, RawResponse } from './support/http';
import { membershipShapeProblem, openAiShapeProblem } from './support/shapes';
import { report, RUNS, SEED } from './support/runs';

const BODY_LIMIT = 65_536;
const UPLOAD_LIMIT = 262_144;
const CASE_TIMEOUT_MS = 10_000;
const CONCURRENCY = 4;

let ipCounter = 0;
/** A different client address per request (trusted from loopback), so per-IP limits do not mask validation. */
const nextIp = () => {
  ipCounter++;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
};

/** The contract's 503 for a feature this test server has no upstream for (e.g. image generation). */
const acceptable5xx = (res: RawResponse) =>
  res.status === 503 && ['no_provider', 'engine_unavailable'].includes(res.json?.error?.code);

interface Violation {
  app: string;
  mode: string;
  op: string;
  kind: string;
  problem: string;
  request: string;
}

async function runCorpus(
  appName: string,
  url: string,
  doc: OpenApiDoc,
  mode: string,
  credential: (path: string) => Record<string, string>,
  shape: (r: RawResponse, path: string) => string | null,
  skip: (method: string, path: string) => boolean,
): Promise<{ tried: number; byStatus: Record<string, number>; violations: Violation[] }> {
  const violations: Violation[] = [];
  const byStatus: Record<string, number> = {};
  let tried = 0;
  const ops = operationsOf(doc).filter((op) => !skip(op.method, op.path));
  let opIndex = 0;
  for (const op of ops) {
    opIndex++;
    const arb = badCases(doc, op, {
      bodyLimit: BODY_LIMIT,
      uploadLimit: UPLOAD_LIMIT,
      headers: () => ({ 'x-forwarded-for': nextIp(), ...credential(op.path) }),
    });
    const cases: BadCase[] = fc.sample(arb, { numRuns: RUNS, seed: SEED + opIndex });
    const queue = [...cases];
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let c = queue.shift(); c; c = queue.shift()) {
          tried++;
          const where = `${c.method} ${c.path.slice(0, 120)}`;
          const record = (problem: string) =>
            violations.push({
              app: appName,
              mode,
              op: `${op.method} ${op.path}`,
              kind: c.kind,
              problem,
              request: `${where} ${c.headers['content-type'] ?? ''} body=${c.body ? JSON.stringify(c.body.subarray(0, 160).toString('latin1')) : '-'}`,
            });
          let res: RawResponse;
          try {
            res = await rawRequest(url, {
              method: c.method,
              path: c.path,
              headers: c.headers,
              body: c.body,
              chunks: c.chunks,
              chunkDelayMs: c.chunkDelayMs,
              timeoutMs: CASE_TIMEOUT_MS,
            });
          } catch (e) {
            record(e instanceof HangError ? 'hang' : `no answer: ${(e as Error).message}`);
            continue;
          }
          byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
          if (acceptable5xx(res))
            byStatus[`${res.status} ${res.json.error.code}`] =
              (byStatus[`${res.status} ${res.json.error.code}`] ?? 0) + 1;
          else if (res.status >= 500) record(`HTTP ${res.status}: ${res.text.slice(0, 200)}`);
          else if (c.mustBe4xx && (res.status < 400 || res.status >= 500))
            record(`expected 4xx, got ${res.status}: ${res.text.slice(0, 160)}`);
          const problem = shape(res, c.path);
          if (problem) record(problem);
          if (/root:x:0:0|\[fonts\]|\[extensions\]/.test(res.text)) record('file content leaked');
        }
      }),
    );
  }
  return { tried, byStatus, violations };
}

/** One line per distinct (app, operation, kind, problem), with one request that shows it. */
function summarize(violations: Violation[]): string[] {
  const seen = new Map<string, Violation & { n: number }>();
  for (const v of violations) {
    const key = `${v.app} ${v.op} ${v.kind} ${v.problem.replace(/request id [\w-]+/, '').slice(0, 60)}`;
    const hit = seen.get(key);
    if (hit) hit.n++;
    else seen.set(key, { ...v, n: 1 });
  }
  return [...seen.values()].map((v) => `${v.app}/${v.mode} ${v.op} [${v.kind}] x${v.n}: ${v.problem} <- ${v.request}`);
}

describe('hardening: bad-input corpus from the OpenAPI documents', () => {
  let membership: RunningApp;
  let gateway: GatewayFixture;
  let memberToken = '';
  let apiKey = '';

  beforeAll(async () => {
    // The providers file names its upstream keys by environment variable; some loaders read process.env.
    Object.assign(process.env, { FAKE_OPENAI_KEY: 'sk-upstream-openai', FAKE_ANTHROPIC_KEY: 'sk-upstream-anthropic' });
    [membership, gateway] = await Promise.all([
      startMembership({
        RATE_LIMIT_PER_MINUTE: '1000000',
        BODY_LIMIT_BYTES: String(BODY_LIMIT),
        UPLOAD_MAX_BYTES: String(UPLOAD_LIMIT),
        REQUEST_TIMEOUT_MS: '2000',
      }),
      startGatewayFixture({ BODY_LIMIT_BYTES: String(BODY_LIMIT), REQUEST_TIMEOUT_MS: '2000' }),
    ]);
    const reg = await fetch(`${membership.url}/api/v1/app/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp() },
      body: JSON.stringify({ username: 'fuzz_member', password: 'fuzz-member-password-1' }),
    });
    expect(reg.status).toBe(200);
    const login = await fetch(`${membership.url}/api/v1/app/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp() },
      body: JSON.stringify({ account: 'fuzz_member', password: 'fuzz-member-password-1' }),
    });
    memberToken = (await login.json()).data.token;
    apiKey = (await gateway.createKey({ name: 'fuzz' })).key;
  }, 120_000);

  afterAll(async () => {
    await Promise.all([membership?.close(), gateway?.close()]);
  });

  // Logout would end the session the credentialed run relies on; it is covered by the attack suite.
  const membershipSkip = (method: string, path: string) => path.endsWith('/auth/logout');

  it(
    'membership: every operation answers bad input with a 4xx envelope, anonymous and as a member',
    async () => {
      const doc = (await (await fetch(`${membership.url}/v3/api-docs`)).json()) as OpenApiDoc;
      const anon = await runCorpus(
        'membership',
        membership.url,
        doc,
        'anonymous',
        () => ({}),
        membershipShapeProblem,
        membershipSkip,
      );
      const member = await runCorpus(
        'membership',
        membership.url,
        doc,
        'member',
        () => ({ authorization: `Bearer ${memberToken}` }),
        membershipShapeProblem,
        membershipSkip,
      );
      report('bad-input membership', {
        seed: SEED,
        operations: operationsOf(doc).length,
        tried: anon.tried + member.tried,
        statuses: { anonymous: anon.byStatus, member: member.byStatus },
      });
      // The app is still healthy and the member's session still works after the corpus.
      expect((await fetch(`${membership.url}/actuator/health`)).status).toBe(200);
      expect(
        (
          await fetch(`${membership.url}/api/v1/app/auth/profile`, {
            headers: { authorization: `Bearer ${memberToken}` },
          })
        ).status,
      ).toBe(200);
      expect(summarize([...anon.violations, ...member.violations])).toEqual([]);
    },
    30 * 60_000,
  );

  it.each([
    [
      'chat',
      '/v1/chat/completions',
      (text: string) => ({ model: 'vendor-gpt-4-mini', max_tokens: 5, messages: [{ role: 'user', content: text }] }),
    ],
    ['embeddings', '/v1/embeddings', (text: string) => ({ model: 'text-embedding-v3', input: text })],
  ])(
    'ai-gateway %s: one long run of CJK or emoji characters (a single BPE "word") is answered',
    async (name, path, body) => {
      // Byte-pair encoding is quadratic in the length of one pre-tokenized word: 20k characters
      // without a space must not hold the event loop (every other client waits meanwhile). That the
      // count's work is linear and yields to the event loop is asserted in work units and turns by
      // tokenizer.spec.ts; here the whole request path answers, and its time is reported, not bounded
      // (a wall-clock limit measured the machine's load as much as the code).
      const times: Record<string, number> = {};
      for (const text of ['字'.repeat(20_000), '😀'.repeat(10_000), 'a'.repeat(60_000)]) {
        const started = Date.now();
        const res = await rawRequest(gateway.gw.url, {
          method: 'POST',
          path,
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(body(text)),
          timeoutMs: 30_000,
        }).catch((e) => e as Error);
        times[`${[...text][0]}x${text.length}`] = Date.now() - started;
        expect({ chars: text.length, status: res instanceof Error ? res.message : res.status < 500 }).toEqual({
          chars: text.length,
          status: true,
        });
      }
      report(`bad-input long runs (${name})`, times);
    },
    120_000,
  );

  it(
    'ai-gateway: every operation answers bad input with a 4xx OpenAI error, anonymous and with an API key / admin token',
    async () => {
      const doc = (await (await fetch(`${gateway.gw.url}/v3/api-docs`)).json()) as OpenApiDoc;
      const credential = (path: string) => ({
        authorization: `Bearer ${path.startsWith('/admin') ? ADMIN_TOKEN : apiKey}`,
      });
      // Deleting keys with the admin token could revoke the key the run uses; ids are random so it cannot, but stay safe.
      const skip = () => false;
      const anon = await runCorpus(
        'ai-gateway',
        gateway.gw.url,
        doc,
        'anonymous',
        () => ({}),
        openAiShapeProblem,
        skip,
      );
      const keyed = await runCorpus('ai-gateway', gateway.gw.url, doc, 'api-key', credential, openAiShapeProblem, skip);
      report('bad-input ai-gateway', {
        seed: SEED,
        operations: operationsOf(doc).length,
        tried: anon.tried + keyed.tried,
        statuses: { anonymous: anon.byStatus, keyed: keyed.byStatus },
      });
      expect((await fetch(`${gateway.gw.url}/actuator/health`)).status).toBe(200);
      expect(
        (await fetch(`${gateway.gw.url}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })).status,
      ).toBe(200);
      expect(summarize([...anon.violations, ...keyed.violations])).toEqual([]);
    },
    30 * 60_000,
  );
});

import { FakeUpstream, startFakeAnthropic, startFakeOpenAi } from '../../../test/support/upstreams';
import { parseProvidersConfig } from './providers-file';
import { LlmRouter, NoDeploymentError } from './router';
import { LlmClient } from './llm-client';
import { UpstreamError } from './types';
import { UnsupportedRequestError } from './anthropic-client';

describe('LlmRouter', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let claude: FakeUpstream;
  const routers: LlmRouter[] = [];
  beforeAll(async () => {
    [a, b, claude] = await Promise.all([startFakeOpenAi(), startFakeOpenAi(), startFakeAnthropic()]);
  });
  afterAll(async () => {
    await Promise.all(routers.map((r) => r.close()));
    await Promise.all([a.close(), b.close(), claude.close()]);
  });
  beforeEach(() => [a, b, claude].forEach((u) => u.reset()));

  function router(doc: any, opts: ConstructorParameters<typeof LlmRouter>[1] = {}) {
    const r = new LlmRouter(parseProvidersConfig(doc, {}), opts);
    routers.push(r);
    return r;
  }
  const twoDeployments = (routing: any = {}, weights = [1, 1]) => ({
    routing: { backoffMs: 10, cooldownMs: 60_000, ...routing },
    deployments: [
      {
        name: 'a',
        type: 'openai',
        baseUrl: '',
        models: [{ name: 'vendor-gpt-4', upstream: 'gpt-a' }],
        weight: weights[0],
      },
      {
        name: 'b',
        type: 'openai',
        baseUrl: '',
        models: [{ name: 'vendor-gpt-4', upstream: 'gpt-b' }],
        weight: weights[1],
      },
    ].map((d, i) => ({ ...d, baseUrl: [a, b][i].url })),
  });
  const ask = { model: 'vendor-gpt-4', messages: [{ role: 'user' as const, content: 'hi' }] };

  it('sends the upstream model name and reports the public one', async () => {
    const r = router(twoDeployments({}, [1, 0]));
    const res = await r.chat(ask);
    expect(res).toMatchObject({ deployment: 'a', upstreamModel: 'gpt-a', attempts: 1 });
    expect(res.value.model).toBe('vendor-gpt-4');
    expect(a.requests[0].body.model).toBe('gpt-a');
  });

  it('chooses deployments by weight', async () => {
    let i = 0;
    const seq = Array.from({ length: 100 }, (_, k) => (k + 0.5) / 100);
    const r = router(twoDeployments({}, [3, 1]), { random: () => seq[i++ % seq.length] });
    const counts: Record<string, number> = { a: 0, b: 0 };
    for (let k = 0; k < 40; k++) counts[(await r.chat(ask)).deployment]++;
    expect(counts.a).toBeGreaterThan(counts.b * 2);
    expect(counts.b).toBeGreaterThan(0);
  });

  it('falls back to the next deployment on a 5xx and cools the failed one down', async () => {
    const r = router(twoDeployments(), { random: () => 0 });
    a.behaviour.failTimes = 1;
    const res = await r.chat(ask);
    expect(res).toMatchObject({ deployment: 'b', attempts: 2 });
    expect(r.isCoolingDown('a')).toBe(true);
    const again = await r.chat(ask);
    expect(again.deployment).toBe('b');
    expect(a.requests).toHaveLength(1);
  });

  it('waits as long as Retry-After asks before retrying the same deployment', async () => {
    const r = router({
      routing: { backoffMs: 10 },
      deployments: [{ name: 'a', type: 'openai', baseUrl: a.url, models: ['vendor-gpt-4'] }],
    });
    a.behaviour.rateLimitTimes = 1;
    a.behaviour.retryAfterSeconds = 1;
    const started = Date.now();
    const res = await r.chat(ask);
    expect(res.attempts).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('does not wait for a Retry-After longer than the policy allows, and surfaces the upstream error', async () => {
    const r = router({
      routing: { maxRetryAfterMs: 500 },
      deployments: [{ name: 'a', type: 'openai', baseUrl: a.url, models: ['vendor-gpt-4'] }],
    });
    a.behaviour.rateLimitTimes = 1;
    a.behaviour.retryAfterSeconds = 30;
    const err = await r.chat(ask).catch((e) => e);
    // The 429 surfaced (a retry after waiting would have succeeded: only one 429 is scripted), after one request.
    expect(err).toMatchObject({ status: 429, deployment: 'a', retryAfterMs: 30_000 });
    expect(a.requests).toHaveLength(1);
  });

  it('does not try a timed-out call again on the same deployment', async () => {
    const r = router({
      routing: { maxAttempts: 3, backoffMs: 10 },
      deployments: [{ name: 'a', type: 'openai', baseUrl: a.url, timeoutMs: 200, models: ['vendor-gpt-4'] }],
    });
    a.behaviour.delayMs = 400;
    const err = await r.chat(ask).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ kind: 'timeout', deployment: 'a' });
    // Each timed-out attempt costs the upstream its whole timeout, and a failed call is not billed.
    expect(a.requests).toHaveLength(1);
  });

  it('tries a timed-out call once more, on another deployment, and no more', async () => {
    const doc = twoDeployments({ maxAttempts: 3 });
    doc.deployments.forEach((d: any) => (d.timeoutMs = 200));
    const r = router(doc, { random: () => 0 });
    a.behaviour.delayMs = b.behaviour.delayMs = 400;
    const err = await r.chat(ask).catch((e) => e);
    expect(err).toMatchObject({ kind: 'timeout', deployment: 'b' });
    expect([a.requests.length, b.requests.length]).toEqual([1, 1]);
    // After a timeout, one attempt more whatever it ends with: a 503 there does not send the call back to a.
    a.reset();
    b.reset();
    a.behaviour.delayMs = 400;
    b.behaviour.failTimes = 5;
    const after = await r.chat(ask, { key: 'k5' }).catch((e) => e);
    expect(after).toMatchObject({ status: 500, deployment: 'b' });
    expect([a.requests.length, b.requests.length]).toEqual([1, 1]);
    b.behaviour.failTimes = 0;
    // A slow deployment still falls back once: the call succeeds on the other.
    expect(await r.chat(ask, { key: 'other' })).toMatchObject({ deployment: 'b', attempts: 2 });
  });

  it('sends a call that found no free connection within its timeout to another deployment, cooling none', async () => {
    const doc = twoDeployments();
    doc.deployments[0] = { ...doc.deployments[0], connections: 1 } as (typeof doc.deployments)[0];
    const r = router(doc, { random: () => 0 });
    const changes: string[] = [];
    r.onHealthChange((c) => changes.push(`${c.state} ${c.deployment}`));
    // k's stream holds a's only connection.
    let release!: () => void;
    a.behaviour.holdAfterChunks = 1;
    a.behaviour.hold = new Promise<void>((done) => (release = done));
    const held = await r.chatStream({ ...ask, stream: true }, { key: 'k' });
    expect(held.deployment).toBe('a');
    const it = held.value[Symbol.asyncIterator]();
    await it.next();
    // k's next call waits its timeout for a connection of a, then goes to b: nothing was sent to a.
    expect(await r.chat(ask, { key: 'k', timeoutMs: 50 })).toMatchObject({ deployment: 'b', attempts: 2 });
    expect(a.requests).toHaveLength(1);
    // a is not at fault: no cooldown, for everyone or for k.
    expect(r.isCoolingDown('a')).toBe(false);
    expect(changes).toEqual([]);
    release();
    for await (const chunk of { [Symbol.asyncIterator]: () => it }) void chunk;
    expect((await r.chat(ask, { key: 'k' })).deployment).toBe('a');
  });

  it("cools a deployment for the failing key alone, and for everyone once a second key's call fails there", async () => {
    let now = 1_000_000;
    const r = router(twoDeployments(), { random: () => 0, now: () => now });
    const changes: string[] = [];
    r.onHealthChange((c) => changes.push(`${c.state} ${c.deployment}`));
    a.behaviour.failTimes = 1;
    expect(await r.chat(ask, { key: 'k1' })).toMatchObject({ deployment: 'b', attempts: 2 });
    // k1's own calls now go to b first; another key's calls still go to a, which answers them.
    expect(r.isCoolingDown('a')).toBe(false);
    expect((await r.chat(ask, { key: 'k1' })).deployment).toBe('b');
    expect((await r.chat(ask, { key: 'k2' })).deployment).toBe('a');
    expect(changes).toEqual([]);
    // A second key's failure there within k1's cooldown: the deployment cools for everyone, once.
    a.behaviour.failTimes = 2;
    expect(await r.chat(ask, { key: 'k2' })).toMatchObject({ deployment: 'b', attempts: 2 });
    expect(r.isCoolingDown('a')).toBe(true);
    expect((await r.chat(ask, { key: 'k3' })).deployment).toBe('b');
    expect(changes).toEqual(['cooled_down a']);
    // After the cooldown a is tried again; its success ends the episode.
    now += 60_001;
    a.behaviour.failTimes = 0;
    expect((await r.chat(ask, { key: 'k3' })).deployment).toBe('a');
    expect(changes).toEqual(['cooled_down a', 'recovered a']);
  });

  it("lets a key's cooldown of a deployment end when its time is up, or when that key's call succeeds there", async () => {
    let now = 1_000_000;
    const r = router(twoDeployments(), { random: () => 0, now: () => now });
    a.behaviour.failTimes = 1;
    await r.chat(ask, { key: 'k1' });
    expect((await r.chat(ask, { key: 'k1' })).deployment).toBe('b');
    now += 60_001;
    expect((await r.chat(ask, { key: 'k1' })).deployment).toBe('a');
    // Another key failing now starts its own cooldown: k1's has ended.
    a.behaviour.failTimes = 1;
    await r.chat(ask, { key: 'k2' });
    expect(r.isCoolingDown('a')).toBe(false);
    expect((await r.chat(ask, { key: 'k1' })).deployment).toBe('a');
    // k2's own cooldown ends with its success on the only deployment left to it.
    b.behaviour.failTimes = 1;
    a.reset();
    expect(await r.chat(ask, { key: 'k2' })).toMatchObject({ deployment: 'a', attempts: 2 });
    expect((await r.chat(ask, { key: 'k2' })).deployment).toBe('a');
  });

  it('does not retry a client error', async () => {
    const r = router(twoDeployments());
    a.behaviour.failTimes = b.behaviour.failTimes = 1;
    a.behaviour.failStatus = b.behaviour.failStatus = 400;
    const err = await r.chat(ask).catch((e) => e);
    expect(err).toMatchObject({ status: 400 });
    expect(a.requests.length + b.requests.length).toBe(1);
  });

  it('retries a stream that fails before its first byte, then streams from the fallback', async () => {
    const r = router(twoDeployments(), { random: () => 0 });
    a.behaviour.failTimes = 1;
    const res = await r.chatStream({ ...ask, stream: true });
    const parts: string[] = [];
    for await (const c of res.value) {
      expect(c.model).toBe('vendor-gpt-4');
      if (c.choices[0]?.delta.content) parts.push(c.choices[0].delta.content);
    }
    expect(res.deployment).toBe('b');
    expect(parts.join('')).toBe('Echo: hi');
  });

  it('routes Anthropic deployments through the translation', async () => {
    const r = router({
      deployments: [
        {
          name: 'claude',
          type: 'anthropic',
          baseUrl: claude.url,
          models: [{ name: 'vendor-claude-3', upstream: 'claude-3-5-sonnet' }],
        },
      ],
    });
    const res = await r.chat({ model: 'vendor-claude-3', messages: [{ role: 'user', content: 'yo' }] });
    expect(res.value.model).toBe('vendor-claude-3');
    expect(res.value.choices[0].message.content).toBe('Echo: yo');
    expect(claude.requests[0].body.model).toBe('claude-3-5-sonnet');
  });

  it('refuses unknown models and embeddings on anthropic deployments', async () => {
    const r = router(twoDeployments());
    await expect(r.chat({ ...ask, model: 'vendor-claude-3' })).rejects.toBeInstanceOf(NoDeploymentError);
    expect(() =>
      router({ deployments: [{ name: 'c', type: 'anthropic', baseUrl: claude.url, models: ['text-embedding-v3'] }] }),
    ).toThrow('chat models only');
    expect(r.servedModels().map((m) => m.name)).toEqual(['vendor-gpt-4']);
  });

  it('serves local deployments with an in-process engine', async () => {
    const engine: LlmClient = {
      chat: async (req) => ({
        id: 'l',
        object: 'chat.completion',
        created: 0,
        model: req.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'local' }, finish_reason: 'stop' }],
      }),
      chatStream: async () => (async function* () {})(),
      embeddings: async () => ({ object: 'list', model: 'x', data: [], usage: { prompt_tokens: 0, total_tokens: 0 } }),
      close: async () => undefined,
    };
    const r = router(
      { deployments: [{ name: 'mini', type: 'local', engine: 'echo', models: ['vendor-gpt-4-mini'] }] },
      { localEngines: { echo: engine } },
    );
    expect((await r.chat({ ...ask, model: 'vendor-gpt-4-mini' })).value.choices[0].message.content).toBe('local');
    expect(() => router({ deployments: [{ name: 'mini', type: 'local', models: ['vendor-gpt-4-mini'] }] })).toThrow(
      'no local engine',
    );
  });

  it('sends token-array embeddings to OpenAI-type deployments when the pool has one, decoding only where none', async () => {
    const calls: unknown[] = [];
    const engine: LlmClient = {
      chat: async () => Promise.reject(new Error('unused')),
      chatStream: async () => Promise.reject(new Error('unused')),
      embeddings: async (req) => (
        calls.push(req.input),
        {
          object: 'list',
          model: 'x',
          data: [{ index: 0, object: 'embedding', embedding: [1] }],
          usage: { prompt_tokens: 1, total_tokens: 1 },
        }
      ),
      close: async () => undefined,
    };
    const local = { name: 'in-process', type: 'local', engine: 'emb', models: ['text-embedding-v3'], weight: 100 };
    const openai = { name: 'a', type: 'openai', baseUrl: a.url, models: ['text-embedding-v3'], weight: 1 };
    // random 0 picks the first, heaviest deployment: the local one, which cannot take these ids.
    const mixed = router({ deployments: [local, openai] }, { localEngines: { emb: engine }, random: () => 0 });
    const refuse = () => {
      throw new UnsupportedRequestError('no text for these ids', 'input');
    };
    for (let k = 0; k < 3; k++)
      expect((await mixed.embeddings({ model: 'text-embedding-v3', input: [[163]] }, {}, refuse)).deployment).toBe('a');
    expect(a.requests.map((q) => q.body.input)).toEqual([[[163]], [[163]], [[163]]]);
    // Text still goes anywhere; a pool of text-only deployments gets the decoded text.
    expect((await mixed.embeddings({ model: 'text-embedding-v3', input: ['hi'] })).deployment).toBe('in-process');
    const onlyLocal = router({ deployments: [local] }, { localEngines: { emb: engine }, random: () => 0 });
    expect(
      (await onlyLocal.embeddings({ model: 'text-embedding-v3', input: [[15339]] }, {}, () => ['hello'])).deployment,
    ).toBe('in-process');
    expect(calls).toEqual([['hi'], ['hello']]);
  });

  it('knows no model and no local engine named like an Object.prototype member', () => {
    const r = router(twoDeployments());
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect([name, r.modelInfo(name)]).toEqual([name, undefined]);
      expect(r.isServed(name)).toBe(false);
    }
    expect(r.modelInfo('vendor-gpt-4')).toMatchObject({ name: 'vendor-gpt-4', kind: 'chat' });
    expect(() =>
      router(
        { deployments: [{ name: 'mini', type: 'local', engine: 'constructor', models: ['vendor-gpt-4-mini'] }] },
        { localEngines: {} },
      ),
    ).toThrow('no local engine named constructor');
  });
});

import { randomInt } from 'crypto';
import WebSocket from 'ws';
import { RunningApp, startGateway, startMembership } from '../support/apps';

// Every per-address limit keys an IPv6 client by its /64 (RATE_LIMIT_IPV6_PREFIX): rotating through
// the addresses of one subscriber's network does not reset the count.
describe('per-address limits group IPv6 by network', () => {
  let gw: RunningApp;
  const LIMIT = 5;
  // A random /64 per run (the Redis used by tests may be shared).
  const net = `2001:db8:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}`;
  let host = 0;
  const inNet = () =>
    `${net}:${(++host).toString(16)}:${randomInt(0x10000).toString(16)}::${randomInt(1, 0x10000).toString(16)}`;

  beforeAll(async () => {
    gw = await startGateway({ RATE_LIMIT_PER_MINUTE: String(LIMIT) });
  });
  afterAll(() => gw?.close());

  const guess = (from: string) =>
    fetch(`${gw.url}/v1/models`, {
      headers: { authorization: `Bearer sk-wrong${randomInt(1e9)}`, 'x-forwarded-for': from },
    });

  it('refused API keys from every address of one /64 count together; another /64 and IPv4 are apart', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 2; i++) statuses.push((await guess(inNet())).status);
    expect(statuses).toEqual([...Array(LIMIT).fill(401), 429, 429]);
    const otherNet = `2001:db8:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}::1`;
    expect((await guess(otherNet)).status).toBe(401);
    expect((await guess(`203.0.113.${randomInt(1, 255)}`)).status).toBe(401);
  });

  /** A /v1/speech/stream session from `from` sending `apiKey`: the error message and close code it ends with. */
  const wsSession = (from: string, apiKey: string) =>
    new Promise<{ close: number; error?: string }>((resolve, reject) => {
      const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}/v1/speech/stream`, {
        headers: { 'x-forwarded-for': from },
      });
      let error: string | undefined;
      ws.on('open', () => ws.send(JSON.stringify({ type: 'config', language: 'en', api_key: apiKey })));
      ws.on('message', (data) => {
        const m = JSON.parse((data as Buffer).toString());
        if (m.type === 'error') error = m.code;
      });
      ws.on('close', (close) => resolve({ close, error }));
      ws.on('error', reject);
    });

  it('keys refused on the speech WebSocket count against the same per-address limit as HTTP (the upgrade skips the guards)', async () => {
    const wsNet = `2001:db8:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}`;
    const from = () => `${wsNet}::${randomInt(1, 0x10000).toString(16)}`;
    const ends = [];
    for (let i = 0; i < LIMIT + 1; i++) ends.push(await wsSession(from(), `sk-wrong${randomInt(1e9)}`));
    expect(ends).toEqual([
      ...Array(LIMIT).fill({ close: 4001, error: 'invalid_api_key' }),
      { close: 4029, error: 'rate_limit_exceeded' },
    ]);
    // The network stays blocked on HTTP too: one count for both transports.
    const http = await fetch(`${gw.url}/v1/models`, {
      headers: { authorization: `Bearer sk-wrong${randomInt(1e9)}`, 'x-forwarded-for': from() },
    });
    expect(http.status).toBe(429);
  });
});

describe('membership login lockout per address groups IPv6 by network', () => {
  let app: RunningApp;
  const MAX = 3;
  const net = `2001:db8:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}`;
  const inNet = () => `${net}:${randomInt(0x10000).toString(16)}::${randomInt(1, 0x10000).toString(16)}`;

  beforeAll(async () => {
    app = await startMembership({
      LOGIN_IP_MAX_FAILURES: String(MAX),
      LOGIN_MAX_FAILURES: '100',
      LOGIN_ACCOUNT_MAX_FAILURES: '100',
    });
  });
  afterAll(() => app?.close());

  const login = (from: string) =>
    fetch(`${app.url}/api/v1/app/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
      body: JSON.stringify({ account: `spray${randomInt(1e9)}`, password: 'wrong-password-1' }),
    }).then(async (r) => ({ status: r.status, code: (await r.json()).code }));

  it('wrong passwords sprayed from many addresses of one /64 lock that network; another /64 is not locked', async () => {
    for (let i = 0; i < MAX; i++) expect((await login(inNet())).code).not.toBe(10008);
    expect(await login(inNet())).toEqual({ status: 423, code: 10008 });
    expect((await login(`2001:db8:${randomInt(0x10000).toString(16)}:1::1`)).code).not.toBe(10008);
  });
});

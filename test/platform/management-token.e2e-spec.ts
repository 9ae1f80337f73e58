import { RunningApp, startGateway, startMembership } from '../support/apps';

const TOKEN = 'management-token-0123456789abcdef';

// L6: with MANAGEMENT_TOKEN set, Prometheus metrics and health details need its bearer; the probes stay
// open and answer with the status alone.
describe.each([
  ['membership', startMembership],
  ['ai-gateway', startGateway],
] as const)('management endpoints with MANAGEMENT_TOKEN (%s)', (_name, start) => {
  let app: RunningApp;

  beforeAll(async () => {
    app = await start({ MANAGEMENT_TOKEN: TOKEN });
  });
  afterAll(() => app?.close());

  const get = (path: string, token?: string) =>
    fetch(`${app.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  it('refuses /actuator/prometheus without the token (401), serves it with the token', async () => {
    for (const token of [undefined, 'wrong-token-wrong-token-wrong', `${TOKEN}x`]) {
      const res = await get('/actuator/prometheus', token);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(await res.text()).not.toContain('http_requests_total');
    }
    const ok = await get('/actuator/prometheus', TOKEN);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('process_cpu_user_seconds_total');
  });

  it('keeps liveness and readiness open without details; details only with the token', async () => {
    for (const path of ['/actuator/health', '/actuator/health/readiness', '/actuator/health/liveness']) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'UP' });
    }
    const detailed = await (await get('/actuator/health', TOKEN)).json();
    expect(detailed).toMatchObject({
      status: 'UP',
      components: { db: { status: 'UP', details: { database: 'postgresql' } } },
    });
    expect((await (await get('/actuator/health/readiness', TOKEN)).json()).components.db.status).toBe('UP');
  });
});

describe('management endpoints without MANAGEMENT_TOKEN', () => {
  it('stay open as before (development; production keeps /actuator/* off the ingress)', async () => {
    const app = await startMembership();
    try {
      expect((await fetch(`${app.url}/actuator/prometheus`)).status).toBe(200);
      expect((await (await fetch(`${app.url}/actuator/health`)).json()).components.db.status).toBe('UP');
    } finally {
      await app.close();
    }
  });
});

import { RunningApp, startGateway } from '../support/apps';

// Found by the hardening corpus: numbers JavaScript prints in exponent form crashed class-validator's
// maxDecimalPlaces and answered 500.
describe('admin keys: numeric edge cases', () => {
  let gw: RunningApp;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw?.close());

  const create = (body: object) =>
    fetch(`${gw.url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-admin-token-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it.each([[2e-323], [5e-324], [1e-7], [1.2345678]])(
    'refuses budget_yuan %p with 400 naming the field',
    async (budget) => {
      const res = await create({ name: 'edge', budget_yuan: budget });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error', param: 'budget_yuan' });
    },
  );

  it('accepts six decimals', async () => {
    const res = await create({ name: 'edge', budget_yuan: 0.000001 });
    expect(res.status).toBe(201);
    expect((await res.json()).budget_yuan).toBe(0.000001);
  });
});

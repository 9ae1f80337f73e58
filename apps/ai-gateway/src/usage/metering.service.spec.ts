import type { AuditContext } from '@app/audit';
import { RunningApp, startGateway } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { queryRows } from '../../../../test/support/database';
import { GatewayErrorCode } from '../errors';
import { apiKeyPrincipal } from '../keys/gateway.authenticator';
import { ApiKeysService } from '../keys/api-keys.service';
import type { CreateApiKeyRequest } from '../keys/dtos/api-key.dto';
import { ProjectsService } from '../projects/projects.service';
import { LedgerRepository } from './ledger.repository';
import { CallOutcome, MeteringService } from './metering.service';

// The real service on a real database (test/support/apps.ts) with keys as the authenticator resolves
// them; the ledger is written when the test flushes it, and budget periods follow the test's clock.
describe('MeteringService', () => {
  const clock = new FakeClock(Date.parse('2030-06-10T04:00:00Z'));
  let app: RunningApp;
  let metering: MeteringService;
  let keys: ApiKeysService;
  const ctx: AuditContext = { actor: { kind: 'admin-token', id: null }, requestId: null, address: null };
  const outcome = (fields: Partial<CallOutcome>): CallOutcome => ({
    endpoint: '/v1/spec',
    model: 'm',
    provider: 'd1',
    status: 'ok',
    costYuan: 0,
    ...fields,
  });
  /** A new key as a call presents it: its principal carries the key's and its project's limits. */
  const keyWith = async (fields: Omit<CreateApiKeyRequest, 'name'> = {}) => {
    const created = await keys.create({ name: 'metering spec', ...fields }, ctx);
    return { id: created.id, principal: apiKeyPrincipal(await keys.resolve(created.key)) };
  };
  const ledger = async (requestId: string) => {
    await app.app.get(LedgerRepository).flush();
    return queryRows(
      app.dbUrl,
      `SELECT status, cost_yuan::float AS cost, prompt_tokens, completion_tokens, http_status, error, provider
         FROM ai_usage_records WHERE request_id = $1`,
      [requestId],
    );
  };

  beforeAll(async () => {
    // The tests flush the ledger before reading it (AI_LEDGER_FLUSH_MS at its most, 60 s, so the timer rarely does).
    app = await startGateway({ LOG_LEVEL: 'silent', AI_LEDGER_FLUSH_MS: '60000' }, { clock });
    metering = app.app.get(MeteringService);
    keys = app.app.get(ApiKeysService);
  });
  afterAll(() => app?.close());

  it('holds nothing for a key without limits; its settled call is written to the ledger and charged to the key with it', async () => {
    const { id, principal } = await keyWith();
    const reservation = await metering.reserve(principal, { model: 'm', yuan: 3, tokens: 100 });
    expect(reservation).toMatchObject({ keyId: id, admitted: null, settled: false });
    await metering.settle(
      reservation,
      outcome({ costYuan: 0.25, promptTokens: 5, completionTokens: 7, httpStatus: 200, requestId: 'metering-free' }),
    );
    expect(await ledger('metering-free')).toEqual([
      {
        status: 'ok',
        cost: 0.25,
        prompt_tokens: 5,
        completion_tokens: 7,
        http_status: 200,
        error: null,
        provider: 'd1',
      },
    ]);
    expect((await keys.get(id)).spent_yuan).toBe(0.25);
  });

  it('holds the worst case of a budgeted key until the call settles, then charges what it cost, once', async () => {
    const { id, principal } = await keyWith({ budget_yuan: 10 });
    const reservation = await metering.reserve(principal, { model: 'm', yuan: 4 });
    expect(await keys.get(id)).toMatchObject({ reserved_yuan: 4, remaining_yuan: 6, spent_yuan: 0 });
    await metering.settle(reservation, outcome({ costYuan: 1.5, requestId: 'metering-budgeted' }));
    await metering.settle(reservation, outcome({ costYuan: 9, requestId: 'metering-budgeted' }));
    expect(await keys.get(id)).toMatchObject({ reserved_yuan: 0, remaining_yuan: 8.5, spent_yuan: 1.5 });
    // Charged when it settled: writing its ledger entry does not charge the key again.
    expect((await ledger('metering-budgeted')).map((r) => r.cost)).toEqual([1.5]);
    expect((await keys.get(id)).spent_yuan).toBe(1.5);
  });

  it('refuses a call its budget cannot take as insufficient_quota, and one larger than its tokens per minute as never fitting, holding nothing', async () => {
    const poor = await keyWith({ budget_yuan: 1 });
    await expect(metering.reserve(poor.principal, { model: 'm', yuan: 2 })).rejects.toMatchObject({
      code: GatewayErrorCode.BudgetExhausted,
      errorCode: 'insufficient_quota',
      status: 429,
    });
    expect(await keys.get(poor.id)).toMatchObject({ reserved_yuan: 0, remaining_yuan: 1 });

    const slow = await keyWith({ tokens_per_minute: 100 });
    await expect(metering.reserve(slow.principal, { model: 'm', yuan: 0, tokens: 101 })).rejects.toMatchObject({
      code: GatewayErrorCode.RequestTooLarge,
      param: 'tokens_per_minute',
    });
    const fits = await metering.reserve(slow.principal, { model: 'm', yuan: 0, tokens: 100 });
    expect(fits.admitted).not.toBeNull();
    await metering.settle(fits, outcome({}));
  });

  it('charges a failed call nothing and counts none of its tokens, whatever its outcome says; its error is cut to 500 characters', async () => {
    const { id, principal } = await keyWith({ budget_yuan: 10, budget_tokens: 1000 });
    const reservation = await metering.reserve(principal, { model: 'm', yuan: 2, tokens: 300 });
    await metering.settle(
      reservation,
      outcome({
        status: 'failed',
        costYuan: 2,
        promptTokens: 300,
        httpStatus: 502,
        error: 'x'.repeat(600),
        requestId: 'metering-failed',
      }),
    );
    expect(await keys.get(id)).toMatchObject({
      spent_yuan: 0,
      reserved_yuan: 0,
      budget_usage: { spent_tokens: 0, reserved_tokens: 0 },
    });
    const [row] = await ledger('metering-failed');
    expect([row.status, row.cost, row.http_status, row.error.length]).toEqual(['failed', 0, 502, 500]);
  });

  it('counts countedTokens, not prompt + completion, against a token budget when the outcome gives them', async () => {
    const { id, principal } = await keyWith({ budget_tokens: 1000 });
    const reservation = await metering.reserve(principal, { model: 'm', yuan: 0, tokens: 400 });
    await metering.settle(reservation, outcome({ promptTokens: 100, completionTokens: 50, countedTokens: 30 }));
    expect((await keys.get(id)).budget_usage).toMatchObject({ spent_tokens: 30, remaining_tokens: 970 });
  });

  it("answers what is left of the tightest budget of the key and its project, a daily one starting again at the clock's midnight", async () => {
    expect(await metering.remaining((await keyWith()).principal)).toEqual({ yuan: null, exhausted: false });

    const project = await app.app
      .get(ProjectsService)
      .create({ name: 'metering spec daily', budget_yuan: 5, budget_period: 'daily' }, ctx);
    const { principal } = await keyWith({ budget_yuan: 8, project_id: project.id });
    const spend = async (yuan: number) =>
      metering.settle(await metering.reserve(principal, { model: 'm', yuan }), outcome({ costYuan: yuan }));
    expect(await metering.remaining(principal)).toEqual({ yuan: 5, exhausted: false });
    await spend(4);
    expect(await metering.remaining(principal)).toEqual({ yuan: 1, exhausted: false });
    await spend(1);
    expect(await metering.remaining(principal)).toEqual({ yuan: 0, exhausted: true });
    await expect(metering.reserve(principal, { model: 'm', yuan: 0.01 })).rejects.toMatchObject({
      code: GatewayErrorCode.BudgetExhausted,
    });

    // The clock reads 12:00 in Asia/Shanghai: a day later the project's budget is whole again, the key's lifetime one is not.
    clock.advance(24 * 3600_000);
    expect(await metering.remaining(principal)).toEqual({ yuan: 3, exhausted: false });
  });
});

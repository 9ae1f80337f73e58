import { randomUUID } from 'crypto';
import type { AuditContext } from '@app/audit';
import { RunningApp, startGateway } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { queryRows } from '../../../../test/support/database';
import { GatewayErrorCode } from '../errors';
import { ApiKeysService } from '../keys/api-keys.service';
import { ProjectsService } from './projects.service';

// The real service on a real database (test/support/apps.ts); the app's clock is the test's, so the
// budget period a project is answered with is the one the test set.
describe('ProjectsService', () => {
  // 23:00 on 31 January in Asia/Shanghai (BUDGET_TIMEZONE's default): an hour before a day and a month end.
  const clock = new FakeClock(Date.parse('2030-01-31T15:00:00Z'));
  let app: RunningApp;
  let projects: ProjectsService;
  let keys: ApiKeysService;
  const ctx: AuditContext = { actor: { kind: 'admin-token', id: null }, requestId: 'projects-spec', address: null };

  beforeAll(async () => {
    app = await startGateway({ LOG_LEVEL: 'silent', BUDGET_TIMEZONE: 'Asia/Shanghai' }, { clock });
    projects = app.app.get(ProjectsService);
    keys = app.app.get(ApiKeysService);
  });
  afterAll(() => app?.close());

  it('answers a budgeted project with the period the clock is in, and the next one once the clock passes its end', async () => {
    const daily = await projects.create({ name: 'spec daily', budget_yuan: 20, budget_period: 'daily' }, ctx);
    expect(daily).toMatchObject({
      name: 'spec daily',
      budget_yuan: 20,
      key_count: 0,
      budget_usage: {
        period: 'daily',
        period_start: '2030-01-30T16:00:00.000Z',
        period_end: '2030-01-31T16:00:00.000Z',
        spent_yuan: 0,
        remaining_yuan: 20,
      },
    });
    const monthly = await projects.create({ name: 'spec monthly', budget_tokens: 1000, budget_period: 'monthly' }, ctx);
    expect(monthly.budget_usage).toMatchObject({
      period_start: '2029-12-31T16:00:00.000Z',
      period_end: '2030-01-31T16:00:00.000Z',
      remaining_tokens: 1000,
    });
    expect((await projects.create({ name: 'spec unbudgeted' }, ctx)).budget_usage).toBeNull();

    clock.advance(2 * 3600_000);
    expect((await projects.get(daily.id)).budget_usage).toMatchObject({
      period_start: '2030-01-31T16:00:00.000Z',
      period_end: '2030-02-01T16:00:00.000Z',
    });
    expect((await projects.get(monthly.id)).budget_usage).toMatchObject({
      period_start: '2030-01-31T16:00:00.000Z',
      period_end: '2030-02-28T16:00:00.000Z',
    });
  });

  it.each(['not-a-uuid', '00000000-0000-4000-8000-000000000000'])(
    'answers not found for id %s on get, update and delete',
    async (id) => {
      const calls = [
        () => projects.get(id),
        () => projects.update(id, { name: 'x' }, ctx),
        () => projects.delete(id, ctx),
      ];
      for (const call of calls) await expect(call()).rejects.toMatchObject({ code: GatewayErrorCode.ProjectNotFound });
    },
  );

  it('a change reaches its keys at once on this replica: a cached key resolves with the new project limits', async () => {
    const project = await projects.create({ name: 'spec team', requests_per_minute: 600 }, ctx);
    const key = await keys.create({ name: 'spec team key', project_id: project.id }, ctx);
    expect((await keys.resolve(key.key)).project?.limits.requestsPerMinute).toBe(600);
    const changed = await projects.update(project.id, { name: 'spec team 2', requests_per_minute: 2 }, ctx);
    expect(changed).toMatchObject({ name: 'spec team 2', requests_per_minute: 2, key_count: 1 });
    expect((await keys.resolve(key.key)).project).toMatchObject({
      name: 'spec team 2',
      limits: { requestsPerMinute: 2 },
    });
  });

  it('counts only the keys that are not revoked, for each project of a list', async () => {
    const tag = `spec-count-${randomUUID().slice(0, 8)}`;
    const one = await projects.create({ name: `${tag} one` }, ctx);
    const two = await projects.create({ name: `${tag} two` }, ctx);
    for (const name of ['a', 'b']) await keys.create({ name, project_id: one.id }, ctx);
    const revoked = await keys.create({ name: 'c', project_id: two.id }, ctx);
    await keys.revoke(revoked.id, ctx);
    const listed = await projects.list({ q: tag, limit: 10, offset: 0 });
    expect(listed.total).toBe(2);
    expect(listed.data.map((p) => [p.id, p.key_count])).toEqual([
      [two.id, 0],
      [one.id, 2],
    ]);
  });

  it('refuses to delete a project that owns keys, naming how many; once they are revoked it deletes it and detaches them', async () => {
    const project = await projects.create({ name: 'spec doomed' }, ctx);
    const key = await keys.create({ name: 'spec doomed key', project_id: project.id }, ctx);
    const refused = await projects.delete(project.id, ctx).catch((e) => e);
    expect(refused).toMatchObject({ code: GatewayErrorCode.ProjectHasKeys, status: 409 });
    expect(refused.message).toContain('still owns 1 key(s)');
    expect((await projects.get(project.id)).id).toBe(project.id);

    await keys.revoke(key.id, ctx);
    expect(await projects.delete(project.id, ctx)).toEqual({ id: project.id, object: 'project', deleted: true });
    await expect(projects.get(project.id)).rejects.toMatchObject({ code: GatewayErrorCode.ProjectNotFound });
    expect((await keys.get(key.id)).project_id).toBeNull();
    const audit = await queryRows(app.dbUrl, `SELECT action FROM ai_audit_log WHERE target_id = $1 ORDER BY id`, [
      project.id,
    ]);
    expect(audit.map((r) => r.action)).toEqual(['project.created', 'project.deleted']);
  });
});

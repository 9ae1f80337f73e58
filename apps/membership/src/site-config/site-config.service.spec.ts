import { AuditContext, cliContext } from '@app/audit';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { SiteConfigService } from './site-config.service';

// The real use case on a real database, seeded by the migrations with the default settings.
describe('SiteConfigService: site settings', () => {
  let app: RunningApp;
  let site: SiteConfigService;
  let adminId: string;
  const byAdmin = (): AuditContext => ({
    actor: { kind: 'member', id: adminId },
    requestId: 'spec-site',
    address: '198.51.100.5',
  });
  const system: AuditContext = { actor: { kind: 'system', id: null }, requestId: null, address: null };
  const updatedBy = async (key: string) =>
    (await queryRows(app.dbUrl, `SELECT updated_by::text AS by FROM site_settings WHERE key = $1`, [key]))[0]?.by;

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent' });
    site = app.app.get(SiteConfigService);
    // Stored directly: site-config/ depends on no other feature (apps/membership/src/feature-boundaries.spec.ts).
    [{ id: adminId }] = await queryRows(
      app.dbUrl,
      `INSERT INTO members (username, roles) VALUES ('site_spec_admin', '{admin}') RETURNING id::text AS id`,
    );
  });
  afterAll(() => app?.close());

  it('answers only the site., seo. and footer. settings to the public, and every setting to the admin', async () => {
    const all = await site.update(
      { 'internal.notes': 'admins only', 'sitewide.flag': 'x', 'seo.keywords': 'k' },
      byAdmin(),
    );
    const pub = await site.values(true);
    expect(pub).toMatchObject({ 'site.name': 'Membership', 'seo.keywords': 'k' });
    expect(Object.keys(pub).filter((k) => !/^(site|seo|footer)\./.test(k))).toEqual([]);
    expect(all).toMatchObject({ 'internal.notes': 'admins only', 'sitewide.flag': 'x', 'seo.keywords': 'k' });
    expect(await site.values(false)).toEqual(all);
  });

  it('upserts values and deletes the keys set to null, recording the old and new values with the caller', async () => {
    await site.update({ 'footer.icp': 'ICP 1', 'custom.key': 'old' }, byAdmin());
    const after = await site.update({ 'footer.icp': null, 'custom.key': 'new', 'custom.added': 'a' }, byAdmin());
    expect(after).toMatchObject({ 'custom.key': 'new', 'custom.added': 'a' });
    expect(after).not.toHaveProperty('footer.icp');
    const rows = await queryRows(
      app.dbUrl,
      `SELECT actor_kind, actor_id, request_id, address, before, after FROM audit_log WHERE action = 'site_config.updated' ORDER BY id DESC LIMIT 1`,
    );
    expect(rows).toEqual([
      {
        actor_kind: 'member',
        actor_id: adminId,
        request_id: 'spec-site',
        address: '198.51.100.5',
        before: { 'footer.icp': 'ICP 1', 'custom.key': 'old', 'custom.added': null },
        after: { 'footer.icp': null, 'custom.key': 'new', 'custom.added': 'a' },
      },
    ]);
  });

  it('stores the member who changed a setting, and nobody for a change by a CLI user (not a member)', async () => {
    await site.update({ 'custom.owner': 'member' }, byAdmin());
    expect(await updatedBy('custom.owner')).toBe(adminId);
    await site.update({ 'custom.owner': 'cli' }, cliContext('operator'));
    expect(await updatedBy('custom.owner')).toBeNull();
  });

  it("names the site by site.name, trimmed, and 'Membership' when it is blank or gone", async () => {
    await site.update({ 'site.name': '  Acme Members ' }, system);
    expect(await site.siteName()).toBe('Acme Members');
    await site.update({ 'site.name': '   ' }, system);
    expect(await site.siteName()).toBe('Membership');
    await site.update({ 'site.name': null }, system);
    expect(await site.siteName()).toBe('Membership');
  });
});

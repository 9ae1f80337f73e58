import { csvHeader, csvLine } from './audit-export';

describe('audit CSV export', () => {
  it('quotes JSON and commas, and defuses formulas', () => {
    expect(csvHeader()).toBe(
      'id,time,actor_kind,actor_id,action,target_type,target_id,request_id,address,before,after\r\n',
    );
    const line = csvLine({
      id: '7',
      time: '2026-11-20T08:15:30.123Z',
      actor: { kind: 'member', id: '42' },
      action: 'site_config.updated',
      target: { type: 'site_config', id: null },
      before: null,
      after: { 'site.name': '=HYPERLINK("x")' },
      request_id: 'r-1',
      address: '203.0.113.7',
    });
    expect(line).toBe(
      '7,2026-11-20T08:15:30.123Z,member,42,site_config.updated,site_config,,r-1,203.0.113.7,,"{""site.name"":""=HYPERLINK(\\""x\\"")""}"\r\n',
    );
    expect(
      csvLine({
        id: '8',
        time: 't',
        actor: { kind: 'cli', id: '=cmd' },
        action: 'a',
        target: { type: 't', id: null },
        before: null,
        after: null,
        request_id: null,
        address: null,
      }),
    ).toContain(",'=cmd,");
  });
});

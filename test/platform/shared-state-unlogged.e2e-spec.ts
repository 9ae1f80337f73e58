import { startGateway, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';

// shared_state holds re-creatable short-lived values; UNLOGGED keeps its per-request counter updates
// off the WAL flush (commits waiting on it made row-lock convoys under load).
describe('shared_state table', () => {
  it.each([
    ['membership', startMembership],
    ['ai-gateway', startGateway],
  ])('is UNLOGGED after the %s migrations and keeps values', async (_name, start) => {
    const app = await start();
    const db = await sqlClient(app.dbUrl);
    try {
      const { rows } = await db.query(`SELECT relpersistence FROM pg_class WHERE relname = 'shared_state'`);
      expect(rows).toEqual([{ relpersistence: 'u' }]);
      await db.query(
        `INSERT INTO shared_state (key, value, expires_at) VALUES ('probe', '1', now() + interval '1 minute')`,
      );
      expect((await db.query(`SELECT value FROM shared_state WHERE key = 'probe'`)).rows).toEqual([{ value: '1' }]);
    } finally {
      await db.end();
      await app.close();
    }
  });
});

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each API key keeps stored of /v1/responses, in bytes: added in the statement that stores a
 * response (which refuses one past AI_RESPONSES_STORE_MAX_BYTES_PER_KEY), taken off by the sweep that
 * deletes expired ones. One row per key, so the check is one indexed row, not a sum over its responses.
 */
export class StoredResponsesQuota1795900000000 implements MigrationInterface {
  name = 'StoredResponsesQuota1795900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_response_store_usage (
        key_id uuid PRIMARY KEY REFERENCES ai_api_keys(id) ON DELETE CASCADE,
        bytes bigint NOT NULL CHECK (bytes >= 0)
      )`);
    await q.query(`INSERT INTO ai_response_store_usage (key_id, bytes) SELECT key_id, sum(bytes) FROM ai_responses GROUP BY key_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_response_store_usage`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each API key keeps stored of /v1/responses, in bytes: raised in the transaction that stores a
 * response (which refuses one past AI_RESPONSES_STORE_MAX_BYTES_PER_KEY), set to the sum of the key's
 * rows by the sweep that deletes expired ones. One row per key, so the check on every save is one
 * indexed row, not a sum over its responses.
 */
export class StoredResponsesQuota1795900000000 implements MigrationInterface {
  name = 'StoredResponsesQuota1795900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_response_store_usage (
        key_id uuid PRIMARY KEY REFERENCES ai_api_keys(id) ON DELETE CASCADE,
        bytes bigint NOT NULL CHECK (bytes >= 0)
      )`);
    await q.query(
      `INSERT INTO ai_response_store_usage (key_id, bytes) SELECT key_id, sum(bytes) FROM ai_responses GROUP BY key_id`,
    );
    // The sweep sets a key's total to the sum of its rows: read from this index alone.
    await q.query(`CREATE INDEX ix_ai_responses_key ON ai_responses (key_id) INCLUDE (bytes)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX ix_ai_responses_key`);
    await q.query(`DROP TABLE ai_response_store_usage`);
  }
}

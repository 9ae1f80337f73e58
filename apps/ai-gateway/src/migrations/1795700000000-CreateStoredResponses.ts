import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Stored Responses (POST /v1/responses with `store`): the response's input items (references and the
 * previous response already expanded) and output items, readable only by the API key that created
 * them, until `expires_at`. Each output item (msg_..., fc_...) has a row naming its response and its
 * position in `output`, so `item_reference` ids resolve with one indexed lookup.
 */
export class CreateStoredResponses1795700000000 implements MigrationInterface {
  name = 'CreateStoredResponses1795700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_responses (
        id varchar(64) PRIMARY KEY,
        key_id uuid NOT NULL REFERENCES ai_api_keys(id) ON DELETE CASCADE,
        input jsonb NOT NULL,
        output jsonb NOT NULL,
        bytes int NOT NULL CHECK (bytes >= 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX ix_ai_responses_expires ON ai_responses (expires_at)`);
    await q.query(`
      CREATE TABLE ai_response_items (
        id varchar(64) PRIMARY KEY,
        response_id varchar(64) NOT NULL REFERENCES ai_responses(id) ON DELETE CASCADE,
        position int NOT NULL CHECK (position >= 0)
      )`);
    await q.query(`CREATE INDEX ix_ai_response_items_response ON ai_response_items (response_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_response_items`);
    await q.query(`DROP TABLE ai_responses`);
  }
}

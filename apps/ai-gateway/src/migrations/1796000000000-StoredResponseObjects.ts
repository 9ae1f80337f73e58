import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * GET /v1/responses/{id} answers the Response object as it was answered: `response` keeps it without
 * its `output` (already in `output`), counted in the row's `bytes` and the key's quota. Rows written
 * before this column (or by a replica older than it) have none: they are not retrievable (404) but
 * still serve previous_response_id, item_reference, input_items and DELETE until they expire.
 * `input_count` is the number of input items, so listing them pages without counting the whole stored
 * input (null on older rows, which are counted).
 */
export class StoredResponseObjects1796000000000 implements MigrationInterface {
  name = 'StoredResponseObjects1796000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ai_responses ADD COLUMN response jsonb, ADD COLUMN input_count int`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ai_responses DROP COLUMN response, DROP COLUMN input_count`);
  }
}

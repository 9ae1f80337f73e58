import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Generated images kept at a URL (vision/generated-images.repository.ts): a row per stored object (its storage
 * key, bytes, when it was stored), or, with storage_key null, a call's hold while the upstream works. The
 * retention sweep reads them oldest first, so it never lists the bucket. key_id has no foreign key: rows outlive
 * a deleted key so the sweep still deletes their objects. What each key keeps, in bytes, is one row of
 * ai_generated_image_usage (one indexed row checked per call, as ai_response_store_usage).
 */
export class GeneratedImages1797030000000 implements MigrationInterface {
  name = 'GeneratedImages1797030000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_generated_images (
        id uuid PRIMARY KEY,
        key_id uuid NOT NULL,
        storage_key varchar(200),
        bytes bigint NOT NULL CHECK (bytes >= 0),
        created_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX ix_ai_generated_images_created ON ai_generated_images (created_at, id)`);
    await q.query(`CREATE INDEX ix_ai_generated_images_key ON ai_generated_images (key_id, created_at)`);
    await q.query(`
      CREATE TABLE ai_generated_image_usage (
        key_id uuid PRIMARY KEY REFERENCES ai_api_keys(id) ON DELETE CASCADE,
        bytes bigint NOT NULL CHECK (bytes >= 0)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_generated_image_usage`);
    await q.query(`DROP TABLE ai_generated_images`);
  }
}

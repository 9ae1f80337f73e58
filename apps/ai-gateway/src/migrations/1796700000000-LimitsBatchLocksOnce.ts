import { MigrationInterface, QueryRunner } from 'typeorm';
import { LOCK_FUNCTION as OLD_LOCK_FUNCTION } from './1796200000000-ProjectsAndLimits';
import { BATCH_FUNCTION as OLD_BATCH_FUNCTION } from './1796600000000-LimitsBatch';

/**
 * `ai_limits_batch` takes each counter's advisory lock once per batch, and the calls in it do not take them again.
 *
 * Before, the batch gathered its calls' counters with three `jsonb_agg` over its operations into one JSON argument
 * for `ai_limits_lock`, which unpacked it again; then every admission and settlement in the batch called
 * `ai_limits_lock` itself, taking locks the transaction already held. Measured with pg_stat_statements
 * (track = all) on a key and project carrying every limit, 64 calls at once: of the batch's 674 µs of
 * PostgreSQL time per call, ~62 µs went to the batch's gathering and ~57 µs to the calls' own locking
 * (25 advisory locks per call, each of them already held).
 *
 * Now the batch hashes the counters' keys straight from its operations, locks them in lock-id order (as one call
 * alone does, so two batches never wait for each other in a cycle), and marks the transaction
 * (`ai.limits_batch_locked`, a transaction-local setting) while its calls run: `ai_limits_lock` returns at once
 * while the mark is on. The mark is cleared when the batch ends, and PostgreSQL drops it with the transaction
 * (or the subtransaction) if the batch fails, so a call run alone, by the sweep or after a batch always locks.
 *
 * PostgreSQL's CPU per call for that key (from /proc, without pg_stat_statements, fresh databases, the old and new
 * functions alternating, four runs of 5 s): 756, 794, 892, 965 µs before; 600, 630, 756, 745 µs after (it grows
 * with each run as the counters' tables collect dead rows); calls answered per run 4 545 to 5 224 before, 5 618 to
 * 6 312 after. test/ai-gateway/limits-lanes.e2e-spec.ts checks the locks and the mark.
 */
export class LimitsBatchLocksOnce1796700000000 implements MigrationInterface {
  name = 'LimitsBatchLocksOnce1796700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(LOCK_FUNCTION);
    await q.query(BATCH_FUNCTION);
  }

  async down(q: QueryRunner): Promise<void> {
    // As 1796200000000-ProjectsAndLimits.ts and 1796600000000-LimitsBatch.ts left them.
    await q.query(OLD_LOCK_FUNCTION.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
    await q.query(OLD_BATCH_FUNCTION.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
  }
}

const LOCK_FUNCTION = `
CREATE OR REPLACE FUNCTION ai_limits_lock(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  id bigint;
BEGIN
  -- Inside ai_limits_batch, which has locked every counter of every call in it already.
  IF current_setting('ai.limits_batch_locked', true) = 'on' THEN
    RETURN;
  END IF;
  FOR id IN
    SELECT DISTINCT hashtextextended(x->>'key', 0) AS h
      FROM jsonb_array_elements(coalesce(p->'windows', '[]') || coalesce(p->'leases', '[]') || coalesce(p->'budgets', '[]')) x
     ORDER BY h
  LOOP
    PERFORM pg_advisory_xact_lock(id);
  END LOOP;
END $$`;

const BATCH_FUNCTION = `
CREATE OR REPLACE FUNCTION ai_limits_batch(ops jsonb) RETURNS jsonb LANGUAGE plpgsql SET lock_timeout = '10s' AS $$
DECLARE
  op jsonb;
  lock_id bigint;
  answers jsonb := '[]';
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  FOR lock_id IN
    SELECT DISTINCT hashtextextended(c->>'key', 0) AS h
      FROM jsonb_array_elements(ops) o,
           jsonb_array_elements(coalesce(o->'p'->'windows', '[]') || coalesce(o->'p'->'leases', '[]') || coalesce(o->'p'->'budgets', '[]')) c
     ORDER BY h
  LOOP
    PERFORM pg_advisory_xact_lock(lock_id);
  END LOOP;
  -- The keys the settlements charge, in id order (as the ledger's charges lock them): one transaction may
  -- charge several keys of a project, and in call order it could wait for the ledger in a cycle.
  PERFORM 1 FROM ai_api_keys
    WHERE id IN (SELECT DISTINCT (o->'p'->>'key_id')::uuid FROM jsonb_array_elements(ops) o WHERE o->'p' ? 'key_id')
    ORDER BY id FOR NO KEY UPDATE;
  PERFORM set_config('ai.limits_batch_locked', 'on', true);
  FOR op IN SELECT * FROM jsonb_array_elements(ops) LOOP
    IF op->>'fn' = 'admit' THEN
      answers := answers || jsonb_build_array(ai_limits_admit(op->'p'));
    ELSIF op->>'fn' = 'settle' THEN
      answers := answers || jsonb_build_array(ai_limits_settle(op->'p'));
    ELSE
      RAISE EXCEPTION 'ai_limits_batch: unknown fn %', op->>'fn';
    END IF;
  END LOOP;
  PERFORM set_config('ai.limits_batch_locked', '', true);
  RETURN answers;
END $$`;

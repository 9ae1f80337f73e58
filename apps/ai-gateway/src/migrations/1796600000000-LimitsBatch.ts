import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `ai_limits_batch(ops jsonb)`: several admissions and settlements of one tenant (a project, or a key
 * without one) in one statement, in the order given, each exactly as `ai_limits_admit` or
 * `ai_limits_settle` alone would run it (1796200000000-ProjectsAndLimits.ts); answers their answers, in
 * order. LimitsRepository sends a tenant's statements one round trip at a time from a replica and puts
 * those that queued meanwhile in the next: a key calling at high concurrency then holds one pooled
 * connection, not one per call waiting on its counters' advisory locks (which took the whole pool from
 * every other tenant), and pays one round trip and one commit per batch.
 *
 * ops: [{ fn: 'admit' | 'settle', p: <the function's argument> }].
 * Every counter of every call is locked first, in lock-id order (ai_limits_lock on their union), as one
 * call alone locks its own: two batches never wait for each other in a cycle. Each call's own
 * ai_limits_lock then takes locks this transaction holds already.
 *
 * And `enable_bitmapscan = off` for the admission and settlement: a busy key's leases are a row inserted and
 * deleted per call, so until autovacuum passes (a minute apart) the key's index range holds thousands of
 * dead entries. A bitmap scan (which the planner picks once the statistics see them) visits them all on
 * every count, and their heap pages: 2 ms per lease count after 4 000 calls of one key, 4.2 ms per
 * admission where a fresh table took 0.9 ms. An index scan marks the dead entries it meets (PostgreSQL's
 * killed index tuples) and later scans step over them: 0.8 to 1.1 ms per admission with 14 000 dead rows.
 * (A later CREATE OR REPLACE of either function drops the setting: it must say SET enable_bitmapscan = off.)
 *
 * And `lock_timeout = '10s'` for the three: a tenant's statements wait in one lane, so one that waited on a
 * lock without end (a transaction holding a counter's lock that never ends) would hold every call of the
 * tenant on the replica; after 10 s it fails (55P03) and the lane goes on.
 */
export class LimitsBatch1796600000000 implements MigrationInterface {
  name = 'LimitsBatch1796600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(BATCH_FUNCTION);
    await q.query(`ALTER FUNCTION ai_limits_admit(jsonb) SET enable_bitmapscan = off`);
    await q.query(`ALTER FUNCTION ai_limits_settle(jsonb) SET enable_bitmapscan = off`);
    await q.query(`ALTER FUNCTION ai_limits_admit(jsonb) SET lock_timeout = '10s'`);
    await q.query(`ALTER FUNCTION ai_limits_settle(jsonb) SET lock_timeout = '10s'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER FUNCTION ai_limits_settle(jsonb) RESET ALL`);
    await q.query(`ALTER FUNCTION ai_limits_admit(jsonb) RESET ALL`);
    await q.query(`DROP FUNCTION ai_limits_batch(jsonb)`);
  }
}

export const BATCH_FUNCTION = `
CREATE FUNCTION ai_limits_batch(ops jsonb) RETURNS jsonb LANGUAGE plpgsql SET lock_timeout = '10s' AS $$
DECLARE
  op jsonb;
  answers jsonb := '[]';
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM ai_limits_lock(jsonb_build_object(
    'windows', (SELECT coalesce(jsonb_agg(c), '[]') FROM jsonb_array_elements(ops) o, jsonb_array_elements(coalesce(o->'p'->'windows', '[]')) c),
    'leases', (SELECT coalesce(jsonb_agg(c), '[]') FROM jsonb_array_elements(ops) o, jsonb_array_elements(coalesce(o->'p'->'leases', '[]')) c),
    'budgets', (SELECT coalesce(jsonb_agg(c), '[]') FROM jsonb_array_elements(ops) o, jsonb_array_elements(coalesce(o->'p'->'budgets', '[]')) c)));
  -- The keys the settlements charge, in id order (as the ledger's charges lock them): one transaction may
  -- charge several keys of a project, and in call order it could wait for the ledger in a cycle.
  PERFORM 1 FROM ai_api_keys
    WHERE id IN (SELECT DISTINCT (o->'p'->>'key_id')::uuid FROM jsonb_array_elements(ops) o WHERE o->'p' ? 'key_id')
    ORDER BY id FOR NO KEY UPDATE;
  FOR op IN SELECT * FROM jsonb_array_elements(ops) LOOP
    IF op->>'fn' = 'admit' THEN
      answers := answers || jsonb_build_array(ai_limits_admit(op->'p'));
    ELSIF op->>'fn' = 'settle' THEN
      answers := answers || jsonb_build_array(ai_limits_settle(op->'p'));
    ELSE
      RAISE EXCEPTION 'ai_limits_batch: unknown fn %', op->>'fn';
    END IF;
  END LOOP;
  RETURN answers;
END $$`;

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Projects that own keys, the limits both carry, and the counters that enforce them
 * (apps/ai-gateway/src/limits/): sliding windows of requests and tokens, leases of calls in flight,
 * and budget usage per period. Two functions do each call's whole check and settlement, so one
 * statement checks and reserves every limit of a call (with PostgreSQL as the shared state) and
 * concurrent calls on any replica can never pass a limit together:
 *
 * - `ai_limits_admit(p jsonb)`: takes advisory locks on every counter the call touches (ordered by
 *   lock id, so no two calls deadlock), checks all of them, and only when all pass adds the call's
 *   requests and tokens to the current window bucket, takes a lease per concurrency limit and holds
 *   the yuan and tokens of each budget (recorded in `ai_limit_holds`, which the sweep releases when a
 *   replica died before settling). It answers which limit refused and when to retry.
 * - `ai_limits_settle(p jsonb)`: replaces a call's token reservation with its actual usage, ends its
 *   leases, releases its holds and charges the budgets, and reports a budget that crossed its alert
 *   threshold or was spent, once per period.
 *
 * Both commit without waiting for the WAL flush (synchronous_commit off for their own transaction): a
 * call pays no disk flush for its limits (measured: 4.8 ms per admission and settlement with the flush,
 * 1.6 ms without, on a loaded 2-core machine). What PostgreSQL itself loses in a crash is at most its last
 * few hundred milliseconds of them, whole transactions only; the ledger (ai_usage_records) keeps every
 * call's cost with a durable commit.
 *
 * The key budgets held until now (`reserved_yuan`, `ai_budget_holds`) move here: a key's lifetime
 * budget usage starts from its `spent_yuan`; holds in flight while migrating are released.
 */
export class ProjectsAndLimits1796200000000 implements MigrationInterface {
  name = 'ProjectsAndLimits1796200000000';

  async up(q: QueryRunner): Promise<void> {
    const limitColumns = `
      requests_per_minute int,
      tokens_per_minute int,
      max_concurrent_requests int,
      model_limits jsonb,
      budget_yuan numeric(20, 10),
      budget_tokens bigint,
      budget_period varchar(16) NOT NULL DEFAULT 'lifetime' CHECK (budget_period IN ('lifetime', 'daily', 'weekly', 'monthly')),
      alert_threshold numeric(4, 3) CHECK (alert_threshold > 0 AND alert_threshold <= 1)`;
    await q.query(`
      CREATE TABLE ai_projects (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name varchar(100) NOT NULL,
        ${limitColumns},
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      ALTER TABLE ai_api_keys
        ADD COLUMN project_id uuid REFERENCES ai_projects (id),
        ADD COLUMN tokens_per_minute int,
        ADD COLUMN max_concurrent_requests int,
        ADD COLUMN model_limits jsonb,
        ADD COLUMN budget_tokens bigint,
        ADD COLUMN budget_period varchar(16) NOT NULL DEFAULT 'lifetime' CHECK (budget_period IN ('lifetime', 'daily', 'weekly', 'monthly')),
        ADD COLUMN alert_threshold numeric(4, 3) CHECK (alert_threshold > 0 AND alert_threshold <= 1)`);
    await q.query(`CREATE INDEX ix_ai_api_keys_project ON ai_api_keys (project_id) WHERE project_id IS NOT NULL`);

    // Windows and leases live a minute or a call: unlogged (a crash forgets them, which only forgives).
    await q.query(
      `CREATE UNLOGGED TABLE ai_limit_windows (key text NOT NULL, bucket bigint NOT NULL, amount bigint NOT NULL, PRIMARY KEY (key, bucket))`,
    );
    await q.query(
      `CREATE UNLOGGED TABLE ai_limit_leases (key text NOT NULL, hold_id uuid NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (key, hold_id))`,
    );
    await q.query(`
      CREATE TABLE ai_budget_usage (
        subject text NOT NULL,
        period_start timestamptz NOT NULL,
        spent_yuan numeric(24, 10) NOT NULL DEFAULT 0,
        reserved_yuan numeric(24, 10) NOT NULL DEFAULT 0,
        spent_tokens bigint NOT NULL DEFAULT 0,
        reserved_tokens bigint NOT NULL DEFAULT 0,
        alerted_at timestamptz,
        exhausted_at timestamptz,
        PRIMARY KEY (subject, period_start)
      )`);
    await q.query(
      `CREATE TABLE ai_limit_holds (id uuid PRIMARY KEY, budgets jsonb NOT NULL, expires_at timestamptz NOT NULL)`,
    );
    await q.query(`CREATE INDEX ix_ai_limit_holds_expires ON ai_limit_holds (expires_at)`);
    await q.query(`CREATE INDEX ix_ai_limit_leases_hold ON ai_limit_leases (hold_id)`);

    await q.query(`
      INSERT INTO ai_budget_usage (subject, period_start, spent_yuan)
      SELECT 'k:' || id, to_timestamp(0), spent_yuan FROM ai_api_keys WHERE budget_yuan IS NOT NULL`);
    await q.query(`DROP TABLE ai_budget_holds`);
    await q.query(`ALTER TABLE ai_api_keys DROP COLUMN reserved_yuan`);

    await q.query(LOCK_FUNCTION);
    await q.query(ADMIT_FUNCTION);
    await q.query(SETTLE_FUNCTION);
    await q.query(RELEASE_FUNCTION);
    await q.query(RENEW_FUNCTION);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION ai_limits_renew(uuid, bigint)`);
    await q.query(`DROP FUNCTION ai_limits_release_expired()`);
    await q.query(`DROP FUNCTION ai_limits_settle(jsonb)`);
    await q.query(`DROP FUNCTION ai_limits_admit(jsonb)`);
    await q.query(`DROP FUNCTION ai_limits_lock(jsonb)`);
    await q.query(`ALTER TABLE ai_api_keys ADD COLUMN reserved_yuan numeric(20, 10) NOT NULL DEFAULT 0`);
    await q.query(`
      CREATE TABLE ai_budget_holds (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        key_id uuid NOT NULL REFERENCES ai_api_keys (id) ON DELETE CASCADE,
        amount numeric(20, 10) NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX ix_ai_budget_holds_expires ON ai_budget_holds (expires_at)`);
    await q.query(`DROP TABLE ai_limit_holds`);
    await q.query(`DROP TABLE ai_budget_usage`);
    await q.query(`DROP TABLE ai_limit_leases`);
    await q.query(`DROP TABLE ai_limit_windows`);
    await q.query(`
      ALTER TABLE ai_api_keys DROP COLUMN project_id, DROP COLUMN tokens_per_minute, DROP COLUMN max_concurrent_requests,
        DROP COLUMN model_limits, DROP COLUMN budget_tokens, DROP COLUMN budget_period, DROP COLUMN alert_threshold`);
    await q.query(`DROP TABLE ai_projects`);
  }
}

// Every counter named in p's windows, leases and budgets, locked for the transaction in lock-id order.
export const LOCK_FUNCTION = `
CREATE FUNCTION ai_limits_lock(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  id bigint;
BEGIN
  FOR id IN
    SELECT DISTINCT hashtextextended(x->>'key', 0) AS h
      FROM jsonb_array_elements(coalesce(p->'windows', '[]') || coalesce(p->'leases', '[]') || coalesce(p->'budgets', '[]')) x
     ORDER BY h
  LOOP
    PERFORM pg_advisory_xact_lock(id);
  END LOOP;
END $$`;

/*
 * p: { now: ms, hold: uuid, hold_ttl_ms,
 *      windows: [{key, name, limit, window_ms, bucket_ms, amount}],
 *      leases:  [{key, name, limit}],
 *      budgets: [{key, name, subject, period_start: ms, period_end: ms | null, budget_yuan, budget_tokens, yuan, tokens, seed_key}] }
 * answers { allowed, refused?: {name, kind, retry_ms (null: never within the window/period)},
 *           windows: [{name, limit, used, reset_ms}], budgets: [{name, spent_yuan, reserved_yuan, spent_tokens, reserved_tokens}] }
 */
export const ADMIT_FUNCTION = `
CREATE FUNCTION ai_limits_admit(p jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  now_ms bigint := (p->>'now')::bigint;
  x jsonb;
  lim bigint;
  amt bigint;
  win bigint;
  bms bigint;
  first_b bigint;
  cur_b bigint;
  used bigint;
  freed bigint;
  retry bigint;
  r record;
  spent ai_budget_usage%ROWTYPE;
  n int;
  refused jsonb;
  windows jsonb := '[]';
  budgets jsonb := '[]';
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM ai_limits_lock(p);

  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'windows', '[]')) LOOP
    lim := (x->>'limit')::bigint; amt := (x->>'amount')::bigint; win := (x->>'window_ms')::bigint; bms := (x->>'bucket_ms')::bigint;
    first_b := floor((now_ms - win)::numeric / bms); cur_b := floor(now_ms::numeric / bms);
    DELETE FROM ai_limit_windows WHERE key = x->>'key' AND bucket < first_b;
    SELECT coalesce(sum(amount), 0) INTO used FROM ai_limit_windows WHERE key = x->>'key';
    IF amt > 0 AND used + amt > lim AND refused IS NULL THEN
      retry := NULL;
      IF amt <= lim THEN
        -- The oldest buckets leave the window first: the retry is when enough of them have left.
        freed := 0;
        FOR r IN SELECT bucket, amount FROM ai_limit_windows WHERE key = x->>'key' ORDER BY bucket LOOP
          freed := freed + r.amount;
          IF used - freed + amt <= lim THEN retry := greatest(1, (r.bucket + 1) * bms + win - now_ms); EXIT; END IF;
        END LOOP;
      END IF;
      refused := jsonb_build_object('name', x->>'name', 'kind', 'window', 'retry_ms', retry);
    END IF;
    windows := windows || jsonb_build_object('name', x->>'name', 'limit', lim, 'used', used + CASE WHEN refused IS NULL THEN amt ELSE 0 END,
                                              'reset_ms', (cur_b + 1) * bms + win - now_ms);
  END LOOP;

  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'leases', '[]')) LOOP
    DELETE FROM ai_limit_leases WHERE key = x->>'key' AND expires_at <= now();
    SELECT count(*) INTO n FROM ai_limit_leases WHERE key = x->>'key';
    IF n >= (x->>'limit')::int AND refused IS NULL THEN
      refused := jsonb_build_object('name', x->>'name', 'kind', 'concurrency', 'retry_ms', 1000);
    END IF;
  END LOOP;

  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'budgets', '[]')) LOOP
    INSERT INTO ai_budget_usage (subject, period_start, spent_yuan)
    VALUES (x->>'subject', to_timestamp((x->>'period_start')::bigint / 1000.0),
            coalesce((SELECT k.spent_yuan FROM ai_api_keys k WHERE k.id = (x->>'seed_key')::uuid), 0))
    ON CONFLICT DO NOTHING;
    SELECT * INTO spent FROM ai_budget_usage WHERE subject = x->>'subject' AND period_start = to_timestamp((x->>'period_start')::bigint / 1000.0);
    IF refused IS NULL AND (
         (x->>'budget_yuan' IS NOT NULL AND spent.spent_yuan + spent.reserved_yuan + (x->>'yuan')::numeric > (x->>'budget_yuan')::numeric)
      OR (x->>'budget_tokens' IS NOT NULL AND spent.spent_tokens + spent.reserved_tokens + (x->>'tokens')::bigint > (x->>'budget_tokens')::bigint)) THEN
      refused := jsonb_build_object('name', x->>'name', 'kind', 'budget',
                                    'retry_ms', CASE WHEN x->>'period_end' IS NULL THEN NULL ELSE greatest(1, (x->>'period_end')::bigint - now_ms) END);
    END IF;
    budgets := budgets || jsonb_build_object('name', x->>'name', 'spent_yuan', spent.spent_yuan, 'reserved_yuan', spent.reserved_yuan,
                                              'spent_tokens', spent.spent_tokens, 'reserved_tokens', spent.reserved_tokens);
  END LOOP;

  IF refused IS NOT NULL THEN
    RETURN jsonb_build_object('allowed', false, 'refused', refused, 'windows', windows, 'budgets', budgets);
  END IF;

  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'windows', '[]')) LOOP
    IF (x->>'amount')::bigint > 0 THEN
      INSERT INTO ai_limit_windows AS w (key, bucket, amount)
      VALUES (x->>'key', floor(now_ms::numeric / (x->>'bucket_ms')::bigint), (x->>'amount')::bigint)
      ON CONFLICT (key, bucket) DO UPDATE SET amount = w.amount + excluded.amount;
    END IF;
  END LOOP;
  INSERT INTO ai_limit_leases (key, hold_id, expires_at)
  SELECT e.v->>'key', (p->>'hold')::uuid, now() + (p->>'hold_ttl_ms')::bigint * interval '1 millisecond'
    FROM jsonb_array_elements(coalesce(p->'leases', '[]')) AS e(v);
  IF jsonb_array_length(coalesce(p->'budgets', '[]')) > 0 THEN
    UPDATE ai_budget_usage u SET reserved_yuan = u.reserved_yuan + (e.v->>'yuan')::numeric, reserved_tokens = u.reserved_tokens + (e.v->>'tokens')::bigint
      FROM jsonb_array_elements(p->'budgets') AS e(v)
     WHERE u.subject = e.v->>'subject' AND u.period_start = to_timestamp((e.v->>'period_start')::bigint / 1000.0);
  END IF;
  -- The hold: what the settlement (or the sweep) gives back; settling deletes it, so a settlement runs once.
  IF p->>'hold_ttl_ms' IS NOT NULL AND (p->>'hold_ttl_ms')::bigint > 0 THEN
    INSERT INTO ai_limit_holds (id, budgets, expires_at)
    VALUES ((p->>'hold')::uuid, coalesce(p->'budgets', '[]'), now() + (p->>'hold_ttl_ms')::bigint * interval '1 millisecond');
  END IF;
  RETURN jsonb_build_object('allowed', true, 'windows', windows, 'budgets', budgets);
END $$`;

/*
 * p: { now: ms, hold: uuid, key_id: uuid | null and key_yuan (charge the key's spent_yuan),
 *      windows: [{key, bucket, bucket_ms, reserved, actual}]   (token windows: the reservation made in bucket, the usage),
 *      leases:  [{key}],
 *      budgets: [{key, subject, period_start: ms, yuan, tokens, budget_yuan, budget_tokens, alert_threshold}] (actual cost) }
 * answers { settled (false: already settled, or released by the sweep), alerts: [subject], exhausted: [subject] } —
 * each alert at most once per budget period.
 */
export const SETTLE_FUNCTION = `
CREATE FUNCTION ai_limits_settle(p jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  now_ms bigint := (p->>'now')::bigint;
  x jsonb;
  held jsonb;
  reserved bigint;
  actual bigint;
  alerts jsonb := '[]';
  exhausted jsonb := '[]';
  s text;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM ai_limits_lock(p);
  -- Settled once: a retried settlement (its first answer lost) finds no hold and changes nothing.
  DELETE FROM ai_limit_holds WHERE id = (p->>'hold')::uuid RETURNING budgets INTO held;
  IF held IS NULL THEN
    RETURN jsonb_build_object('settled', false, 'alerts', alerts, 'exhausted', exhausted);
  END IF;
  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'windows', '[]')) LOOP
    reserved := (x->>'reserved')::bigint; actual := (x->>'actual')::bigint;
    IF actual < reserved THEN
      UPDATE ai_limit_windows SET amount = greatest(0, amount - (reserved - actual)) WHERE key = x->>'key' AND bucket = (x->>'bucket')::bigint;
    ELSIF actual > reserved THEN
      -- Usage beyond the reservation is counted now (the call is over; it cannot be refused any more).
      INSERT INTO ai_limit_windows AS w (key, bucket, amount)
      VALUES (x->>'key', floor(now_ms::numeric / (x->>'bucket_ms')::bigint), actual - reserved)
      ON CONFLICT (key, bucket) DO UPDATE SET amount = w.amount + excluded.amount;
    END IF;
  END LOOP;
  DELETE FROM ai_limit_leases l USING jsonb_array_elements(coalesce(p->'leases', '[]')) AS e(v)
   WHERE l.key = e.v->>'key' AND l.hold_id = (p->>'hold')::uuid;

  UPDATE ai_budget_usage u SET reserved_yuan = greatest(0, u.reserved_yuan - (e.v->>'yuan')::numeric),
                               reserved_tokens = greatest(0, u.reserved_tokens - (e.v->>'tokens')::bigint)
    FROM jsonb_array_elements(held) AS e(v)
   WHERE u.subject = e.v->>'subject' AND u.period_start = to_timestamp((e.v->>'period_start')::bigint / 1000.0);
  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'budgets', '[]')) LOOP
    UPDATE ai_budget_usage u SET spent_yuan = u.spent_yuan + (x->>'yuan')::numeric, spent_tokens = u.spent_tokens + (x->>'tokens')::bigint
     WHERE u.subject = x->>'subject' AND u.period_start = to_timestamp((x->>'period_start')::bigint / 1000.0);
    IF x->>'alert_threshold' IS NOT NULL THEN
      UPDATE ai_budget_usage u SET alerted_at = now()
       WHERE u.subject = x->>'subject' AND u.period_start = to_timestamp((x->>'period_start')::bigint / 1000.0) AND u.alerted_at IS NULL
         AND ((x->>'budget_yuan' IS NOT NULL AND u.spent_yuan >= (x->>'budget_yuan')::numeric * (x->>'alert_threshold')::numeric)
           OR (x->>'budget_tokens' IS NOT NULL AND u.spent_tokens >= (x->>'budget_tokens')::numeric * (x->>'alert_threshold')::numeric))
      RETURNING u.subject INTO s;
      IF s IS NOT NULL THEN alerts := alerts || to_jsonb(s); s := NULL; END IF;
    END IF;
    UPDATE ai_budget_usage u SET exhausted_at = now()
     WHERE u.subject = x->>'subject' AND u.period_start = to_timestamp((x->>'period_start')::bigint / 1000.0) AND u.exhausted_at IS NULL
       AND ((x->>'budget_yuan' IS NOT NULL AND u.spent_yuan >= (x->>'budget_yuan')::numeric)
         OR (x->>'budget_tokens' IS NOT NULL AND u.spent_tokens >= (x->>'budget_tokens')::numeric))
    RETURNING u.subject INTO s;
    IF s IS NOT NULL THEN exhausted := exhausted || to_jsonb(s); s := NULL; END IF;
  END LOOP;
  IF p->>'key_id' IS NOT NULL THEN
    UPDATE ai_api_keys SET spent_yuan = spent_yuan + (p->>'key_yuan')::numeric, last_used_at = now() WHERE id = (p->>'key_id')::uuid;
  END IF;
  RETURN jsonb_build_object('settled', true, 'alerts', alerts, 'exhausted', exhausted);
END $$`;

/**
 * Releases ONE expired hold of a call that never settled (a replica that died); false when none is left.
 * One hold per transaction, its counters' advisory locks taken before its row (as a settlement does), so
 * the sweep never deadlocks with admissions and settlements; the app calls it until it answers false.
 * Running calls renew their holds (CallAdmission), so only abandoned ones expire.
 */
const RELEASE_FUNCTION = `
CREATE FUNCTION ai_limits_release_expired() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  h record;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT id, budgets INTO h FROM ai_limit_holds WHERE expires_at < now() ORDER BY expires_at LIMIT 1;
  IF NOT FOUND THEN RETURN false; END IF;
  PERFORM ai_limits_lock(jsonb_build_object('budgets', h.budgets));
  DELETE FROM ai_limit_holds WHERE id = h.id AND expires_at < now();
  IF FOUND THEN
    UPDATE ai_budget_usage u SET reserved_yuan = greatest(0, u.reserved_yuan - (e.v->>'yuan')::numeric),
                                 reserved_tokens = greatest(0, u.reserved_tokens - (e.v->>'tokens')::bigint)
      FROM jsonb_array_elements(h.budgets) AS e(v)
     WHERE u.subject = e.v->>'subject' AND u.period_start = to_timestamp((e.v->>'period_start')::bigint / 1000.0);
  END IF;
  RETURN true;
END $$`;

/** A running call keeps its hold and leases: both expire `ttl_ms` from now again; false when the hold is gone. */
const RENEW_FUNCTION = `
CREATE FUNCTION ai_limits_renew(hold uuid, ttl_ms bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  UPDATE ai_limit_holds SET expires_at = now() + ttl_ms * interval '1 millisecond' WHERE id = hold;
  IF NOT FOUND THEN RETURN false; END IF;
  UPDATE ai_limit_leases SET expires_at = now() + ttl_ms * interval '1 millisecond' WHERE hold_id = hold;
  RETURN true;
END $$`;

import { MigrationInterface, QueryRunner } from 'typeorm';
import { ADMIT_FUNCTION } from './1796200000000-ProjectsAndLimits';
import { SETTLE_WITH_EVENTS } from './1796500000000-BudgetWebhookEvents';

/**
 * A call's limits reach each counter row by its key, and read a window's total, not every bucket of it.
 *
 * Before:
 * - `ai_limits_admit` summed a window's buckets (one row per second of the last minute: 60 once a key has called
 *   for a minute) for every window of every call, after a DELETE of the buckets older than the window, and counted
 *   a concurrency limit's leases after a DELETE of the expired ones.
 * - The budget reservation (admission), its release and the end of the leases (settlement) were each one UPDATE or
 *   DELETE joined with the call's JSON array. PostgreSQL plans a function's statement once per session, while the
 *   tables are small: a sequential scan. Every call leaves dead row versions in these few hot rows' tables until a
 *   vacuum, so each scan read more pages than the last: with a key calling at 64 at once, the budget reservation
 *   went from 13 to 143 µs in 40 s, and the key's PostgreSQL CPU per call from 690 to 1 040 µs within 100 s.
 *
 * Now:
 * - `ai_limit_window_totals`: a window's total, the sum of its bucket rows. A trigger on `ai_limit_windows` keeps it
 *   whoever writes a bucket (an admission, a settlement, a replica still running the previous function during a
 *   rolling deploy), in the writer's transaction, under the counter's advisory lock the writer holds. Unlogged, as the
 *   buckets are: a crash empties both.
 * - The admission reads the total and whether any bucket has left the window (one index probe each); only when one
 *   has does it delete those (the trigger takes them out of the total), about once a second a window. The leases are
 *   counted without the expired ones, which are deleted only when the count met some (a replica died holding them).
 *   What is counted is the same as before: the rows the DELETEs would have removed are the rows left out.
 * - Budgets are reserved and released, and leases ended, row by row on their primary keys.
 *
 * Measured in one PostgreSQL session, 4 000 calls of a key and project carrying every limit (eight windows: an
 * admission at authentication, the call's admission, its settlement; in transactions of 10 calls), the old and new
 * functions alternating: 777 and 769 µs per call with the windows full, 510 and 528 µs with them empty; now 504 and
 * 523 µs, 522 and 512 µs.
 * Through the gateway, that key at 64 calls at once, the build before and this one alternating for 100 s: PostgreSQL's
 * CPU per call 689, 743, 813, 955, 968, 1 043 µs before (growing), 594, 588, 578, 588, 603, 581 µs after; calls
 * answered in 8 s 6 912 to 9 014 before, 10 305 to 11 933 after. test/ai-gateway/limits-counters.e2e-spec.ts counts
 * the rows and scans.
 */
export class LimitCountersReadOnce1796800000000 implements MigrationInterface {
  name = 'LimitCountersReadOnce1796800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE UNLOGGED TABLE ai_limit_window_totals (key text PRIMARY KEY, amount bigint NOT NULL)`);
    await q.query(TOTAL_FUNCTION);
    // No bucket is written between the trigger and the totals taken from what is there (the lock holds until the
    // migration's transaction ends; writers wait).
    await q.query(`LOCK TABLE ai_limit_windows IN SHARE ROW EXCLUSIVE MODE`);
    await q.query(
      `CREATE TRIGGER ai_limit_windows_total AFTER INSERT OR UPDATE OR DELETE ON ai_limit_windows
         FOR EACH ROW EXECUTE FUNCTION ai_limit_windows_total()`,
    );
    await q.query(
      `INSERT INTO ai_limit_window_totals (key, amount) SELECT key, sum(amount) FROM ai_limit_windows GROUP BY key`,
    );
    await q.query(ADMIT);
    await q.query(SETTLE);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(ADMIT_FUNCTION.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
    await q.query(SETTLE_WITH_EVENTS);
    // As 1796600000000-LimitsBatch.ts set them (a CREATE OR REPLACE drops a function's settings).
    for (const fn of ['ai_limits_admit', 'ai_limits_settle']) {
      await q.query(`ALTER FUNCTION ${fn}(jsonb) SET enable_bitmapscan = off`);
      await q.query(`ALTER FUNCTION ${fn}(jsonb) SET lock_timeout = '10s'`);
    }
    await q.query(`DROP TRIGGER ai_limit_windows_total ON ai_limit_windows`);
    await q.query(`DROP FUNCTION ai_limit_windows_total()`);
    await q.query(`DROP TABLE ai_limit_window_totals`);
  }
}

// A bucket's amount added to (taken from) its window's total as the bucket is written (a bucket's key never changes).
const TOTAL_FUNCTION = `
CREATE FUNCTION ai_limit_windows_total() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO ai_limit_window_totals AS t (key, amount) VALUES (NEW.key, NEW.amount)
    ON CONFLICT (key) DO UPDATE SET amount = t.amount + excluded.amount;
  ELSIF TG_OP = 'UPDATE' THEN
    UPDATE ai_limit_window_totals SET amount = amount + NEW.amount - OLD.amount WHERE key = NEW.key;
  ELSE
    UPDATE ai_limit_window_totals SET amount = amount - OLD.amount WHERE key = OLD.key;
  END IF;
  RETURN NULL;
END $$`;

// 1796200000000-ProjectsAndLimits.ts's function, with the settings 1796600000000-LimitsBatch.ts gave it, reading each
// window's total and each concurrency limit's live leases in one statement.
export const ADMIT = `
CREATE OR REPLACE FUNCTION ai_limits_admit(p jsonb) RETURNS jsonb LANGUAGE plpgsql
  SET enable_bitmapscan = off SET lock_timeout = '10s' AS $$
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
  stale boolean;
  refused jsonb;
  windows jsonb := '[]';
  budgets jsonb := '[]';
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM ai_limits_lock(p);

  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'windows', '[]')) LOOP
    lim := (x->>'limit')::bigint; amt := (x->>'amount')::bigint; win := (x->>'window_ms')::bigint; bms := (x->>'bucket_ms')::bigint;
    first_b := floor((now_ms - win)::numeric / bms); cur_b := floor(now_ms::numeric / bms);
    -- The window's total (ai_limit_window_totals), less the buckets that left it: deleted when there are some
    -- (once a bucket a window), which takes them out of the total.
    SELECT coalesce((SELECT t.amount FROM ai_limit_window_totals t WHERE t.key = x->>'key'), 0),
           EXISTS (SELECT 1 FROM ai_limit_windows w WHERE w.key = x->>'key' AND w.bucket < first_b)
      INTO used, stale;
    IF stale THEN
      DELETE FROM ai_limit_windows WHERE key = x->>'key' AND bucket < first_b;
      SELECT coalesce((SELECT t.amount FROM ai_limit_window_totals t WHERE t.key = x->>'key'), 0) INTO used;
    END IF;
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
    -- Expired leases are not counted, and deleted only when there are some (a replica died holding them).
    SELECT count(*) FILTER (WHERE expires_at > now()), coalesce(bool_or(expires_at <= now()), false)
      INTO n, stale FROM ai_limit_leases WHERE key = x->>'key';
    IF stale THEN
      DELETE FROM ai_limit_leases WHERE key = x->>'key' AND expires_at <= now();
      -- Counted again: a lease renewed (ai_limits_renew takes no counter lock) between the count and the DELETE
      -- is live, not deleted, and was not counted.
      SELECT count(*) INTO n FROM ai_limit_leases WHERE key = x->>'key' AND expires_at > now();
    END IF;
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
  -- Row by row on the primary key (as in ai_limits_settle: no join whose first plan is a sequential scan).
  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'budgets', '[]')) LOOP
    UPDATE ai_budget_usage u SET reserved_yuan = u.reserved_yuan + (x->>'yuan')::numeric, reserved_tokens = u.reserved_tokens + (x->>'tokens')::bigint
     WHERE u.subject = x->>'subject' AND u.period_start = to_timestamp((x->>'period_start')::bigint / 1000.0);
  END LOOP;
  -- The hold: what the settlement (or the sweep) gives back; settling deletes it, so a settlement runs once.
  IF p->>'hold_ttl_ms' IS NOT NULL AND (p->>'hold_ttl_ms')::bigint > 0 THEN
    INSERT INTO ai_limit_holds (id, budgets, expires_at)
    VALUES ((p->>'hold')::uuid, coalesce(p->'budgets', '[]'), now() + (p->>'hold_ttl_ms')::bigint * interval '1 millisecond');
  END IF;
  RETURN jsonb_build_object('allowed', true, 'windows', windows, 'budgets', budgets);
END $$`;

// 1796500000000-BudgetWebhookEvents.ts's function, with the settings 1796600000000-LimitsBatch.ts gave it, ending the
// call's leases and releasing its holds row by row on the primary keys.
const SETTLE = `

CREATE OR REPLACE FUNCTION ai_limits_settle(p jsonb) RETURNS jsonb LANGUAGE plpgsql
  SET enable_bitmapscan = off SET lock_timeout = '10s' AS $$
DECLARE
  now_ms bigint := (p->>'now')::bigint;
  x jsonb;
  held jsonb;
  reserved bigint;
  actual bigint;
  alerts jsonb := '[]';
  exhausted jsonb := '[]';
  s text;
  v_spent_yuan numeric;
  v_spent_tokens bigint;
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
  -- Row by row on the primary keys: a join with the JSON array is planned once, while the tables are small, and a
  -- sequential scan of a table that grows with every call's dead row versions (between vacuums) stays its plan.
  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'leases', '[]')) LOOP
    DELETE FROM ai_limit_leases WHERE key = x->>'key' AND hold_id = (p->>'hold')::uuid;
  END LOOP;
  FOR x IN SELECT * FROM jsonb_array_elements(held) LOOP
    UPDATE ai_budget_usage u SET reserved_yuan = greatest(0, u.reserved_yuan - (x->>'yuan')::numeric),
                                 reserved_tokens = greatest(0, u.reserved_tokens - (x->>'tokens')::bigint)
     WHERE u.subject = x->>'subject' AND u.period_start = to_timestamp((x->>'period_start')::bigint / 1000.0);
  END LOOP;
  FOR x IN SELECT * FROM jsonb_array_elements(coalesce(p->'budgets', '[]')) LOOP
    UPDATE ai_budget_usage u SET spent_yuan = u.spent_yuan + (x->>'yuan')::numeric, spent_tokens = u.spent_tokens + (x->>'tokens')::bigint
     WHERE u.subject = x->>'subject' AND u.period_start = to_timestamp((x->>'period_start')::bigint / 1000.0);
    IF x->>'alert_threshold' IS NOT NULL THEN
      UPDATE ai_budget_usage u SET alerted_at = now()
       WHERE u.subject = x->>'subject' AND u.period_start = to_timestamp((x->>'period_start')::bigint / 1000.0) AND u.alerted_at IS NULL
         AND ((x->>'budget_yuan' IS NOT NULL AND u.spent_yuan >= (x->>'budget_yuan')::numeric * (x->>'alert_threshold')::numeric)
           OR (x->>'budget_tokens' IS NOT NULL AND u.spent_tokens >= (x->>'budget_tokens')::numeric * (x->>'alert_threshold')::numeric))
      RETURNING u.subject, u.spent_yuan, u.spent_tokens INTO s, v_spent_yuan, v_spent_tokens;
      IF s IS NOT NULL THEN
        alerts := alerts || to_jsonb(s);
        PERFORM ai_budget_event('threshold_reached', x, v_spent_yuan, v_spent_tokens, now_ms);
        s := NULL;
      END IF;
    END IF;
    UPDATE ai_budget_usage u SET exhausted_at = now()
     WHERE u.subject = x->>'subject' AND u.period_start = to_timestamp((x->>'period_start')::bigint / 1000.0) AND u.exhausted_at IS NULL
       AND ((x->>'budget_yuan' IS NOT NULL AND u.spent_yuan >= (x->>'budget_yuan')::numeric)
         OR (x->>'budget_tokens' IS NOT NULL AND u.spent_tokens >= (x->>'budget_tokens')::numeric))
    RETURNING u.subject, u.spent_yuan, u.spent_tokens INTO s, v_spent_yuan, v_spent_tokens;
    IF s IS NOT NULL THEN
      exhausted := exhausted || to_jsonb(s);
      PERFORM ai_budget_event('exhausted', x, v_spent_yuan, v_spent_tokens, now_ms);
      s := NULL;
    END IF;
  END LOOP;
  IF p->>'key_id' IS NOT NULL THEN
    UPDATE ai_api_keys SET spent_yuan = spent_yuan + (p->>'key_yuan')::numeric, last_used_at = now() WHERE id = (p->>'key_id')::uuid;
  END IF;
  RETURN jsonb_build_object('settled', true, 'alerts', alerts, 'exhausted', exhausted);
END $$`;

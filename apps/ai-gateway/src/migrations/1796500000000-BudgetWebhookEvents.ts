import { MigrationInterface, QueryRunner } from 'typeorm';
import { SETTLE_FUNCTION } from './1796200000000-ProjectsAndLimits';

/**
 * Budget webhook events in the settlement that crosses the threshold: `ai_limits_settle` (body copied from
 * 1796200000000-ProjectsAndLimits.ts, unchanged but for the two enqueues) calls `ai_budget_event` where it
 * marks a budget's alert (`alerted_at`) or its exhaustion (`exhausted_at`), so the event
 * (key.budget.threshold_reached, key.budget.exhausted, project.budget.*) is written by
 * `ai_webhook_enqueue` (libs/webhooks/src/webhook-migrations.ts) in the same transaction, exactly once per
 * budget period: the marks are set once. The settlement commits with synchronous_commit off (see
 * 1796200000000): a crash in its last few hundred milliseconds loses the mark and the event together, so
 * the next settlement that crosses the line sends it.
 */
export class BudgetWebhookEvents1796500000000 implements MigrationInterface {
  name = 'BudgetWebhookEvents1796500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(BUDGET_EVENT_FUNCTION);
    await q.query(SETTLE_WITH_EVENTS);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(SETTLE_FUNCTION.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
    await q.query(`DROP FUNCTION ai_budget_event(text, jsonb, numeric, bigint, bigint)`);
  }
}

/*
 * x: one budget of the settlement (apps/ai-gateway/src/limits/call-limits.ts BudgetCounter: subject k:<id> or
 * p:<id>, name as the JSON array [scope, name, field, model], period, period_start and period_end in ms,
 * budget_yuan, budget_tokens, alert_threshold). The payload names fields as the keys and projects API does.
 */
const BUDGET_EVENT_FUNCTION = `
CREATE FUNCTION ai_budget_event(kind text, x jsonb, p_spent_yuan numeric, p_spent_tokens bigint, now_ms bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  scope text := CASE WHEN left(x->>'subject', 2) = 'p:' THEN 'project' ELSE 'key' END;
  iso text := 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';
BEGIN
  PERFORM ai_webhook_enqueue(
    scope || '.budget.' || kind,
    jsonb_build_object(
      scope || '_id', substr(x->>'subject', 3),
      'name', (x->>'name')::jsonb->>1,
      'period', x->>'period',
      'period_start', to_char(to_timestamp((x->>'period_start')::bigint / 1000.0) AT TIME ZONE 'UTC', iso),
      'period_end', CASE WHEN x->>'period_end' IS NULL THEN NULL ELSE to_char(to_timestamp((x->>'period_end')::bigint / 1000.0) AT TIME ZONE 'UTC', iso) END,
      'budget_yuan', trim_scale((x->>'budget_yuan')::numeric),
      'budget_tokens', (x->>'budget_tokens')::bigint,
      'alert_threshold', (x->>'alert_threshold')::numeric,
      'spent_yuan', trim_scale(p_spent_yuan),
      'spent_tokens', p_spent_tokens),
    to_timestamp(now_ms / 1000.0));
END $$`;

export const SETTLE_WITH_EVENTS = `
CREATE OR REPLACE FUNCTION ai_limits_settle(p jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
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

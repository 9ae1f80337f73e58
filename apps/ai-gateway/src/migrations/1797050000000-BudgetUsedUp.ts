import { MigrationInterface, QueryRunner } from 'typeorm';
import { ADMIT } from './1796800000000-LimitCountersReadOnce';

/**
 * A budget used up refuses every call of its period, free ones too: spent (not reserved) at or above the budget,
 * and more than nothing (a budget of 0 still lets a key call free models).
 *
 * Before, a call was refused only when spent + reserved + its own cost passed the budget, so a budget spent to
 * the last fen still admitted calls of a free model. Which calls a used-up budget refuses then depended on the
 * model named in the body, and a replica could not refuse the key's calls before reading their bodies. Now a
 * used-up budget stays refused until its period ends (what is spent only grows within a period; a change of the
 * budget is a new plan), which CallAdmission remembers per replica and answers before the body is read
 * (`SpentBudgets`, apps/ai-gateway/src/limits/spent-budgets.ts).
 */
export class BudgetUsedUp1797050000000 implements MigrationInterface {
  name = 'BudgetUsedUp1797050000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(USED_UP_ADMIT);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(ADMIT);
  }
}

const BEFORE = `IF refused IS NULL AND (
         (x->>'budget_yuan' IS NOT NULL AND spent.spent_yuan + spent.reserved_yuan + (x->>'yuan')::numeric > (x->>'budget_yuan')::numeric)
      OR (x->>'budget_tokens' IS NOT NULL AND spent.spent_tokens + spent.reserved_tokens + (x->>'tokens')::bigint > (x->>'budget_tokens')::bigint)) THEN`;

const AFTER = `IF refused IS NULL AND (
         (x->>'budget_yuan' IS NOT NULL AND (spent.spent_yuan + spent.reserved_yuan + (x->>'yuan')::numeric > (x->>'budget_yuan')::numeric
            OR (spent.spent_yuan > 0 AND spent.spent_yuan >= (x->>'budget_yuan')::numeric)))
      OR (x->>'budget_tokens' IS NOT NULL AND (spent.spent_tokens + spent.reserved_tokens + (x->>'tokens')::bigint > (x->>'budget_tokens')::bigint
            OR (spent.spent_tokens > 0 AND spent.spent_tokens >= (x->>'budget_tokens')::bigint)))) THEN`;

// Each budget's answer says whether it is used up, by the rule above in exact numeric arithmetic (SpentBudgets
// remembers what it says; a float comparison of numeric(20,10) amounts could round a spend just under a budget up).
const REPORT_BEFORE = `'spent_tokens', spent.spent_tokens, 'reserved_tokens', spent.reserved_tokens);`;
const REPORT_AFTER = `'spent_tokens', spent.spent_tokens, 'reserved_tokens', spent.reserved_tokens,
                                              'used_up', coalesce((x->>'budget_yuan' IS NOT NULL AND spent.spent_yuan > 0 AND spent.spent_yuan >= (x->>'budget_yuan')::numeric)
                                                OR (x->>'budget_tokens' IS NOT NULL AND spent.spent_tokens > 0 AND spent.spent_tokens >= (x->>'budget_tokens')::bigint), false));`;

for (const part of [BEFORE, REPORT_BEFORE])
  if (ADMIT.split(part).length !== 2)
    throw new Error('1797050000000-BudgetUsedUp: the admission function is not the one it changes');
const USED_UP_ADMIT = ADMIT.replace(BEFORE, AFTER).replace(REPORT_BEFORE, REPORT_AFTER);

import type { BudgetCounter } from './call-limits';
import type { AdmitAnswer } from './limit-answer';

/** A budget found used up: refused until its period ends (`until`, Infinity for a lifetime budget). */
interface UsedUp {
  budget: BudgetCounter;
  /** The budget's plan: a change of the budget, its period or the period itself is another entry. */
  plan: string;
  until: number;
}

/**
 * Budgets this replica saw used up, per subject (`k:<id>`, `p:<id>`), so that a key's calls are refused before
 * their bodies are read, parsed and counted.
 *
 * Exact with any number of replicas: a budget is remembered only when the shared state refused a call with it
 * used up (spent, not reserved, at or above the budget and above nothing: ai_limits_admit, migration
 * 1797050000000-BudgetUsedUp), and such a budget refuses every call until its period ends, since what is spent
 * only grows within a period. A change of the budget (its amounts or period) is another plan, asked of the shared
 * state again. Entries end with their period; at most MAX_REMEMBERED subjects are kept.
 */
export class SpentBudgets {
  static readonly MAX_REMEMBERED = 10_000;
  private readonly usedUp = new Map<string, UsedUp>();

  /** Keeps the budgets a refusal shows used up (those of `budgets`, the call's plan, the answer reports). */
  remember(budgets: BudgetCounter[], answer: AdmitAnswer, now: number): void {
    if (answer.allowed || !answer.budgets) return;
    for (const b of budgets) {
      const state = answer.budgets.find((x) => x.name === b.name);
      if (!state || !usedUp(state)) continue;
      if (!this.usedUp.has(b.subject) && this.usedUp.size >= SpentBudgets.MAX_REMEMBERED) this.evict(now);
      this.usedUp.set(b.subject, { budget: b, plan: planOf(b), until: b.period_end ?? Infinity });
    }
  }

  /**
   * The used-up budget among `budgets` (each subject's budget for the period holding `now`, from planCall), or null.
   * Only subjects remembered cost more than a map lookup.
   */
  find(budgets: BudgetCounter[], now: number): BudgetCounter | null {
    for (const b of budgets) {
      const known = this.usedUp.get(b.subject);
      if (!known) continue;
      if (now >= known.until || known.plan !== planOf(b)) {
        this.usedUp.delete(b.subject);
        continue;
      }
      return known.budget;
    }
    return null;
  }

  /** Whether any subject is remembered (the common case: none, and nothing else to look at). */
  get empty(): boolean {
    return this.usedUp.size === 0;
  }

  /** Whether `subject` is remembered (before a period's bounds are worked out for it). */
  has(subject: string): boolean {
    return this.usedUp.has(subject);
  }

  private evict(now: number): void {
    for (const [subject, entry] of this.usedUp) if (entry.until <= now) this.usedUp.delete(subject);
    if (this.usedUp.size >= SpentBudgets.MAX_REMEMBERED) this.usedUp.delete(this.usedUp.keys().next().value!);
  }
}

/**
 * Spent at or above the budget, and above nothing: ai_limits_admit's rule since 1797050000000-BudgetUsedUp, which
 * answers it per budget (`used_up`, worked out in exact numeric arithmetic there, not again here).
 */
function usedUp(s: NonNullable<AdmitAnswer['budgets']>[number]): boolean {
  return s.used_up === true;
}

function planOf(b: BudgetCounter): string {
  return `${b.key}\u0000${b.budget_yuan}\u0000${b.budget_tokens}\u0000${b.period}`;
}

import { Column } from 'typeorm';
import type { BudgetPeriod, ModelLimit } from './limit-set';

/**
 * The limit columns of ai_api_keys and ai_projects (one definition for both entities, embedded with
 * `@Column(() => LimitColumnsEmbed, { prefix: false })`).
 */
export class LimitColumnsEmbed {
  @Column({ name: 'requests_per_minute', type: 'int', nullable: true })
  requestsPerMinute: number | null;

  @Column({ name: 'tokens_per_minute', type: 'int', nullable: true })
  tokensPerMinute: number | null;

  @Column({ name: 'max_concurrent_requests', type: 'int', nullable: true })
  maxConcurrentRequests: number | null;

  /** `{model: {requests_per_minute, tokens_per_minute, max_concurrent_requests}}` */
  @Column({ name: 'model_limits', type: 'jsonb', nullable: true })
  modelLimits: Record<string, ModelLimit> | null;

  /** Yuan; null means no budget. numeric columns come back as strings. */
  @Column({ name: 'budget_yuan', type: 'numeric', precision: 20, scale: 10, nullable: true })
  budgetYuan: string | null;

  /** Input + output tokens per period; bigint comes back as a string. */
  @Column({ name: 'budget_tokens', type: 'bigint', nullable: true })
  budgetTokens: string | null;

  @Column({ name: 'budget_period', type: 'varchar', length: 16, default: 'lifetime' })
  budgetPeriod: BudgetPeriod;

  @Column({ name: 'alert_threshold', type: 'numeric', precision: 4, scale: 3, nullable: true })
  alertThreshold: string | null;
}

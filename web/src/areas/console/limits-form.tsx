import { useMutation, useQueryClient } from '@tanstack/react-query';
import { FormEvent, ReactNode, useEffect, useId, useState } from 'react';
import { messageOf } from '../../api/client';
import { gateway } from '../../api/gateway';
import { t } from '../../i18n';
import { Field, Notice } from '../../ui';
import { optionalNumber } from './keys-page';

const PERIODS = ['lifetime', 'daily', 'weekly', 'monthly'] as const;

/** The fields keys and projects share (apps/ai-gateway/src/limits/dtos/limit-fields.dto.ts), as the forms edit them. */
export interface LimitOwner {
  id: string;
  name: string;
  requests_per_minute?: number | null;
  tokens_per_minute?: number | null;
  max_concurrent_requests?: number | null;
  budget_yuan?: number | null;
  budget_tokens?: number | null;
  budget_period?: (typeof PERIODS)[number];
}

const text = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));

/**
 * A key's or a project's name, limits and budget (empty: no limit), saved with PATCH /admin/keys/{id} or
 * /admin/projects/{id}; the page's query (`detail`) takes the answer and the list is fetched again.
 */
export function LimitsForm<T extends LimitOwner>({
  owner,
  resource,
  detail,
  canWrite,
  intro,
}: {
  owner: T;
  resource: 'keys' | 'projects';
  detail: 'key' | 'project';
  canWrite: boolean;
  intro?: ReactNode;
}) {
  const queries = useQueryClient();
  const [name, setName] = useState(owner.name);
  const [rpm, setRpm] = useState(text(owner.requests_per_minute));
  const [tpm, setTpm] = useState(text(owner.tokens_per_minute));
  const [concurrent, setConcurrent] = useState(text(owner.max_concurrent_requests));
  const [budget, setBudget] = useState(text(owner.budget_yuan));
  const [budgetTokens, setBudgetTokens] = useState(text(owner.budget_tokens));
  const [period, setPeriod] = useState(owner.budget_period ?? 'lifetime');
  useEffect(() => setName(owner.name), [owner.name]);
  const headingId = useId();
  const periodId = useId();
  const save = useMutation({
    mutationFn: () =>
      gateway<T>('PATCH', `/admin/${resource}/${encodeURIComponent(owner.id)}`, {
        name: name.trim(),
        requests_per_minute: optionalNumber(rpm),
        tokens_per_minute: optionalNumber(tpm),
        max_concurrent_requests: optionalNumber(concurrent),
        budget_yuan: optionalNumber(budget),
        budget_tokens: optionalNumber(budgetTokens),
        budget_period: period,
      }),
    onSuccess: (saved) => {
      queries.setQueryData([detail, owner.id], saved);
      void queries.invalidateQueries({ queryKey: [resource] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>{t('console.key.limits')}</h2>
      {intro}
      <form onSubmit={submit}>
        <fieldset disabled={!canWrite} className="plain">
          <Field label={t('console.keys.name')} name="name" value={name} onChange={setName} maxLength={100} />
          <Field
            label={t('console.keys.rpm')}
            name="rpm"
            type="number"
            value={rpm}
            onChange={setRpm}
            required={false}
            hint={t('console.keys.emptyNoLimit')}
          />
          <Field
            label={t('console.keys.tpm')}
            name="tpm"
            type="number"
            value={tpm}
            onChange={setTpm}
            required={false}
          />
          <Field
            label={t('console.projects.concurrent')}
            name="concurrent"
            type="number"
            value={concurrent}
            onChange={setConcurrent}
            required={false}
          />
          <Field
            label={t('console.keys.budget')}
            name="budget"
            type="number"
            value={budget}
            onChange={setBudget}
            required={false}
          />
          <Field
            label={t('console.projects.budgetTokens')}
            name="budget_tokens"
            type="number"
            value={budgetTokens}
            onChange={setBudgetTokens}
            required={false}
          />
          <div className="field">
            <label htmlFor={periodId}>{t('console.projects.period')}</label>
            <select
              id={periodId}
              value={period}
              onChange={(e) => setPeriod(e.target.value as (typeof PERIODS)[number])}
            >
              {PERIODS.map((p) => (
                <option key={p} value={p}>
                  {t(`console.projects.period.${p}`)}
                </option>
              ))}
            </select>
          </div>
          {canWrite && (
            <button type="submit" className="primary" disabled={save.isPending}>
              {t('console.save')}
            </button>
          )}
        </fieldset>
      </form>
      <Notice error={save.error ? messageOf(save.error) : null} success={save.isSuccess ? t('console.saved') : null} />
    </section>
  );
}

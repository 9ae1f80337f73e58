import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { FormEvent, useId, useState } from 'react';
import { messageOf } from '../../api/client';
import { gateway } from '../../api/gateway';
import { formatDateTime, t } from '../../i18n';
import { Field, Notice } from '../../ui';
import { ConsoleLink, ConsolePage, useCanWrite } from './console-area';
import { optionalNumber, Pager } from './keys-page';
import { formatYuan, List } from './model';

/** A project of GET /admin/projects (apps/ai-gateway/src/projects/dtos/project.dto.ts). */
interface Project {
  id: string;
  name: string;
  key_count: number;
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  max_concurrent_requests: number | null;
  budget_yuan: number | null;
  budget_tokens: number | null;
  budget_period: 'lifetime' | 'daily' | 'weekly' | 'monthly';
  budget_usage: { spent_yuan: number; remaining_yuan: number | null } | null;
  created_at: string;
}

const PAGE = 20;

/** Projects: search by name (server-paginated), create; a project's page edits its limits and budgets. */
export default function ProjectsPage({ path }: { path: string }) {
  const canWrite = useCanWrite();
  const queries = useQueryClient();
  const [input, setInput] = useState('');
  const [q, setQ] = useState('');
  const [page, setPage] = useState(0);
  const [name, setName] = useState('');
  const projects = useQuery({
    queryKey: ['projects', q, page],
    queryFn: () => gateway<List<Project>>('GET', `/admin/projects?limit=${PAGE}&offset=${page * PAGE}${q ? `&q=${encodeURIComponent(q)}` : ''}`),
    placeholderData: keepPreviousData,
  });
  const create = useMutation({
    mutationFn: () => gateway<Project>('POST', '/admin/projects', { name: name.trim() }),
    onSuccess: () => {
      setName('');
      void queries.invalidateQueries({ queryKey: ['projects'] });
    },
  });
  return (
    <ConsolePage path={path} title={t('console.nav.projects')}>
      <form
        role="search"
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          setQ(input.trim());
          setPage(0);
        }}
      >
        <Field label={t('console.projects.search')} name="q" type="search" value={input} onChange={setInput} required={false} maxLength={100} />
        <button type="submit">{t('console.members.searchSubmit')}</button>
      </form>
      {canWrite && (
        <form
          className="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            create.mutate();
          }}
        >
          <Field label={t('console.projects.newName')} name="project-name" value={name} onChange={setName} maxLength={100} />
          <button type="submit" className="primary" disabled={create.isPending}>
            {t('console.projects.create')}
          </button>
        </form>
      )}
      <Notice error={projects.error ? messageOf(projects.error) : create.error ? messageOf(create.error) : null} success={create.isSuccess ? t('console.projects.created') : null} />
      <div className="table-wrap card">
        <table data-testid="projects">
          <caption className="visually-hidden">{t('console.nav.projects')}</caption>
          <thead>
            <tr>
              <th scope="col">{t('console.keys.name')}</th>
              <th scope="col" className="num">{t('console.projects.keys')}</th>
              <th scope="col" className="num">{t('console.keys.rpm')}</th>
              <th scope="col" className="num">{t('console.keys.budget')}</th>
              <th scope="col" className="num">{t('console.keys.spent')}</th>
              <th scope="col">{t('console.key.created')}</th>
            </tr>
          </thead>
          <tbody>
            {(projects.data?.data ?? []).map((p) => (
              <tr key={p.id}>
                <th scope="row">
                  <ConsoleLink to={`/projects/${p.id}`}>{p.name}</ConsoleLink>
                </th>
                <td className="num">{p.key_count}</td>
                <td className="num">{p.requests_per_minute ?? '—'}</td>
                <td className="num">{formatYuan(p.budget_yuan)}</td>
                <td className="num">{formatYuan(p.budget_usage?.spent_yuan)}</td>
                <td>{formatDateTime(p.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {projects.data && projects.data.data.length === 0 && <p className="empty-note">{t('console.projects.none')}</p>}
      </div>
      <Pager page={page} total={projects.data?.total ?? 0} size={PAGE} onPage={setPage} />
    </ConsolePage>
  );
}

/** One project: its limits and budgets (`null` = unlimited), editable by an admin. */
export function ProjectPage({ path, id }: { path: string; id: string }) {
  const project = useQuery({ queryKey: ['project', id], queryFn: () => gateway<Project>('GET', `/admin/projects/${encodeURIComponent(id)}`) });
  return (
    <ConsolePage path={path} title={project.data ? t('console.project.title', { name: project.data.name }) : t('console.nav.projects')}>
      <Notice error={project.error ? messageOf(project.error) : null} />
      {project.data && <ProjectForm project={project.data} />}
    </ConsolePage>
  );
}

function ProjectForm({ project }: { project: Project }) {
  const canWrite = useCanWrite();
  const queries = useQueryClient();
  const text = (v: number | null) => (v === null ? '' : String(v));
  const [name, setName] = useState(project.name);
  const [rpm, setRpm] = useState(text(project.requests_per_minute));
  const [tpm, setTpm] = useState(text(project.tokens_per_minute));
  const [concurrent, setConcurrent] = useState(text(project.max_concurrent_requests));
  const [budget, setBudget] = useState(text(project.budget_yuan));
  const [budgetTokens, setBudgetTokens] = useState(text(project.budget_tokens));
  const [period, setPeriod] = useState(project.budget_period);
  const periodId = useId();
  const save = useMutation({
    mutationFn: () =>
      gateway<Project>('PATCH', `/admin/projects/${encodeURIComponent(project.id)}`, {
        name: name.trim(),
        requests_per_minute: optionalNumber(rpm),
        tokens_per_minute: optionalNumber(tpm),
        max_concurrent_requests: optionalNumber(concurrent),
        budget_yuan: optionalNumber(budget),
        budget_tokens: optionalNumber(budgetTokens),
        budget_period: period,
      }),
    onSuccess: (p) => {
      queries.setQueryData(['project', project.id], p);
      void queries.invalidateQueries({ queryKey: ['projects'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <section className="card" aria-labelledby="project-limits">
      <h2 id="project-limits">{t('console.key.limits')}</h2>
      <p className="intro">{t('console.project.intro', { keys: project.key_count })}</p>
      <form onSubmit={submit}>
        <fieldset disabled={!canWrite} className="plain">
          <Field label={t('console.keys.name')} name="name" value={name} onChange={setName} maxLength={100} />
          <Field label={t('console.keys.rpm')} name="rpm" type="number" value={rpm} onChange={setRpm} required={false} hint={t('console.keys.emptyNoLimit')} />
          <Field label={t('console.keys.tpm')} name="tpm" type="number" value={tpm} onChange={setTpm} required={false} />
          <Field label={t('console.projects.concurrent')} name="concurrent" type="number" value={concurrent} onChange={setConcurrent} required={false} />
          <Field label={t('console.keys.budget')} name="budget" type="number" value={budget} onChange={setBudget} required={false} />
          <Field label={t('console.projects.budgetTokens')} name="budget_tokens" type="number" value={budgetTokens} onChange={setBudgetTokens} required={false} />
          <div className="field">
            <label htmlFor={periodId}>{t('console.projects.period')}</label>
            <select id={periodId} value={period} onChange={(e) => setPeriod(e.target.value as Project['budget_period'])}>
              {(['lifetime', 'daily', 'weekly', 'monthly'] as const).map((p) => (
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

import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf } from '../../api/client';
import { gateway } from '../../api/gateway';
import { formatDateTime, t } from '../../i18n';
import { Field, Notice } from '../../ui';
import { ConsoleLink, ConsolePage, useCanWrite } from './console-area';
import { Pager } from './keys-page';
import { LimitsForm } from './limits-form';
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
    queryFn: () =>
      gateway<List<Project>>(
        'GET',
        `/admin/projects?limit=${PAGE}&offset=${page * PAGE}${q ? `&q=${encodeURIComponent(q)}` : ''}`,
      ),
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
        <Field
          label={t('console.projects.search')}
          name="q"
          type="search"
          value={input}
          onChange={setInput}
          required={false}
          maxLength={100}
        />
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
          <Field
            label={t('console.projects.newName')}
            name="project-name"
            value={name}
            onChange={setName}
            maxLength={100}
          />
          <button type="submit" className="primary" disabled={create.isPending}>
            {t('console.projects.create')}
          </button>
        </form>
      )}
      <Notice
        error={projects.error ? messageOf(projects.error) : create.error ? messageOf(create.error) : null}
        success={create.isSuccess ? t('console.projects.created') : null}
      />
      <div className="table-wrap card">
        <table data-testid="projects">
          <caption className="visually-hidden">{t('console.nav.projects')}</caption>
          <thead>
            <tr>
              <th scope="col">{t('console.keys.name')}</th>
              <th scope="col" className="num">
                {t('console.projects.keys')}
              </th>
              <th scope="col" className="num">
                {t('console.keys.rpm')}
              </th>
              <th scope="col" className="num">
                {t('console.keys.budget')}
              </th>
              <th scope="col" className="num">
                {t('console.keys.spent')}
              </th>
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
  const project = useQuery({
    queryKey: ['project', id],
    queryFn: () => gateway<Project>('GET', `/admin/projects/${encodeURIComponent(id)}`),
  });
  return (
    <ConsolePage
      path={path}
      title={project.data ? t('console.project.title', { name: project.data.name }) : t('console.nav.projects')}
    >
      <Notice error={project.error ? messageOf(project.error) : null} />
      {project.data && <ProjectForm project={project.data} />}
    </ConsolePage>
  );
}
function ProjectForm({ project }: { project: Project }) {
  const canWrite = useCanWrite();
  return (
    <LimitsForm
      owner={project}
      resource="projects"
      detail="project"
      canWrite={canWrite}
      intro={<p className="intro">{t('console.project.intro', { keys: project.key_count })}</p>}
    />
  );
}

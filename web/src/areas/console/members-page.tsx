import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { FormEvent, useState } from 'react';
import { api, messageOf } from '../../api/client';
import { formatDateTime, t } from '../../i18n';
import { Field, Notice } from '../../ui';
import { ConsoleLink, ConsolePage } from './console-area';
import { Pager } from './keys-page';

export interface AdminMember {
  id: string;
  username: string;
  nickname: string | null;
  email: string | null;
  phone: string | null;
  status: 'active' | 'disabled';
  roles: string[];
  createdTime: string;
  lastLoginTime: string | null;
}

const PAGE = 20;

/** Members: search (start of username, email, phone or nickname, or an id), paginated on the server. */
export default function MembersPage({ path }: { path: string }) {
  const [input, setInput] = useState('');
  const [q, setQ] = useState('');
  const [page, setPage] = useState(0);
  const members = useQuery({
    queryKey: ['members', q, page],
    queryFn: () =>
      api<{ items: AdminMember[]; total: number; totalCapped: boolean }>(
        'GET',
        `/api/v1/admin/members?limit=${PAGE}&offset=${page * PAGE}${q ? `&q=${encodeURIComponent(q)}` : ''}`,
      ),
    placeholderData: keepPreviousData,
  });
  const search = (e: FormEvent) => {
    e.preventDefault();
    setQ(input.trim());
    setPage(0);
  };
  return (
    <ConsolePage path={path} title={t('console.nav.members')}>
      <form role="search" className="inline-form" onSubmit={search}>
        <Field
          label={t('console.members.search')}
          name="q"
          type="search"
          value={input}
          onChange={setInput}
          required={false}
          maxLength={100}
        />
        <button type="submit">{t('console.members.searchSubmit')}</button>
      </form>
      <Notice error={members.error ? messageOf(members.error) : null} />
      <div className="table-wrap card">
        <table>
          <caption className="visually-hidden">{t('console.nav.members')}</caption>
          <thead>
            <tr>
              <th scope="col">{t('console.members.username')}</th>
              <th scope="col">{t('console.members.contact')}</th>
              <th scope="col">{t('console.members.roles')}</th>
              <th scope="col">{t('console.keys.status')}</th>
              <th scope="col">{t('console.members.lastLogin')}</th>
            </tr>
          </thead>
          <tbody>
            {(members.data?.items ?? []).map((m) => (
              <tr key={m.id}>
                <th scope="row">
                  <ConsoleLink to={`/members/${m.id}`}>{m.username}</ConsoleLink>
                  {m.nickname && <span className="meta-inline"> · {m.nickname}</span>}
                </th>
                <td>{m.email ?? m.phone ?? '—'}</td>
                <td>{m.roles.join(', ') || '—'}</td>
                <td>
                  <span className={`badge ${m.status === 'active' ? 'on' : ''}`}>
                    {t(`console.members.status.${m.status}`)}
                  </span>
                </td>
                <td>{formatDateTime(m.lastLoginTime)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {members.data && members.data.items.length === 0 && <p className="empty-note">{t('console.members.none')}</p>}
      </div>
      <Pager
        page={page}
        total={members.data?.total ?? 0}
        more={members.data?.totalCapped ?? false}
        size={PAGE}
        onPage={setPage}
      />
    </ConsolePage>
  );
}

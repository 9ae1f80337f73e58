import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createContext, lazy, ReactNode, Suspense, useContext, useEffect, useState } from 'react';
import { roleOf } from '../../api/gateway';
import { useSession } from '../../api/session';
import { MessageKey, t } from '../../i18n';
import { href, navigate } from '../../router';
import { PageTitle, Shell } from '../../ui';
import { ChallengePage } from '../account/challenge-page';
import { SignInPage } from '../account/sign-in-page';

// Pages load on first visit: the charts library comes with the pages that draw charts only.
const OverviewPage = lazy(() => import('./overview-page'));
const KeysPage = lazy(() => import('./keys-page'));
const KeyPage = lazy(() => import('./key-page'));
const MembersPage = lazy(() => import('./members-page'));
const MemberPage = lazy(() => import('./member-page'));
const UsagePage = lazy(() => import('./usage-page'));
const ProjectsPage = lazy(() => import('./projects-page'));
const ProjectPage = lazy(() => import('./projects-page').then((m) => ({ default: m.ProjectPage })));
const UpstreamsPage = lazy(() => import('./upstreams-page'));
const SettingsPage = lazy(() => import('./settings-page'));
const AuditPage = lazy(() => import('./audit-page'));

export type Role = 'admin' | 'viewer';
const RoleContext = createContext<Role>('viewer');
/** The operator's role: a viewer sees no write controls (the APIs refuse their writes anyway). */
export const useRole = (): Role => useContext(RoleContext);
export const useCanWrite = (): boolean => useRole() === 'admin';

const NAV: Array<[string, MessageKey]> = [
  ['/', 'console.nav.overview'],
  ['/keys', 'console.nav.keys'],
  ['/projects', 'console.nav.projects'],
  ['/usage', 'console.nav.usage'],
  ['/upstreams', 'console.nav.upstreams'],
  ['/members', 'console.nav.members'],
  ['/settings', 'console.nav.settings'],
  ['/audit', 'console.nav.audit'],
];

function Nav({ path }: { path: string }) {
  const current = (p: string) => (p === '/' ? path === '/' : path === p || path.startsWith(`${p}/`));
  return (
    <nav className="console-nav" aria-label={t('console.nav.label')}>
      <ul>
        {NAV.map(([p, key]) => (
          <li key={p}>
            <a
              href={href('console', p)}
              aria-current={current(p) ? 'page' : undefined}
              onClick={(e) => {
                if (e.metaKey || e.ctrlKey || e.shiftKey) return;
                e.preventDefault();
                navigate('console', p);
              }}
            >
              {t(key)}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/** A console page's frame: the shell with the console's navigation. */
export function ConsolePage({
  path,
  title,
  children,
  actions,
}: {
  path: string;
  title: string;
  children: ReactNode;
  actions?: ReactNode;
}) {
  return (
    <Shell area="console" nav={<Nav path={path} />}>
      <div className="page-head">
        <PageTitle>{title}</PageTitle>
        {actions}
      </div>
      {children}
    </Shell>
  );
}

/** Links inside the console (no reload). */
export function ConsoleLink({ to, children }: { to: string; children: ReactNode }) {
  return (
    <a
      href={href('console', to)}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey) return;
        e.preventDefault();
        navigate('console', to);
      }}
    >
      {children}
    </a>
  );
}

function Pages({ path }: { path: string }) {
  const keyMatch = /^\/keys\/([^/]+)$/.exec(path);
  const memberMatch = /^\/members\/([^/]+)$/.exec(path);
  if (path === '/') return <OverviewPage path={path} />;
  if (path === '/keys') return <KeysPage path={path} />;
  if (keyMatch) return <KeyPage path="/keys" id={decodeURIComponent(keyMatch[1])} />;
  if (path === '/members') return <MembersPage path={path} />;
  if (memberMatch) return <MemberPage path="/members" id={decodeURIComponent(memberMatch[1])} />;
  const projectMatch = /^\/projects\/([^/]+)$/.exec(path);
  if (path === '/projects') return <ProjectsPage path={path} />;
  if (projectMatch) return <ProjectPage path="/projects" id={decodeURIComponent(projectMatch[1])} />;
  if (path === '/usage') return <UsagePage path={path} />;
  if (path === '/upstreams') return <UpstreamsPage path={path} />;
  if (path === '/settings') return <SettingsPage path={path} />;
  if (path === '/audit') return <AuditPage path={path} />;
  return (
    <ConsolePage path={path} title={t('app.notFound')}>
      <p>
        <ConsoleLink to="/">{t('console.nav.overview')}</ConsoleLink>
      </p>
    </ConsolePage>
  );
}

/**
 * The operator console: sign-in (the account area's pages, one implementation for both), then pages for
 * operators with the `admin` or `viewer` role. Server state through TanStack Query (cached, refetched
 * after writes); the area itself is loaded lazily by app.tsx, so the account page never downloads it.
 */
export function ConsoleArea({ path }: { path: string }) {
  const { member, token } = useSession();
  const [client] = useState(
    () =>
      new QueryClient({
        defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false, staleTime: 10_000 } },
      }),
  );
  const signedIn = member !== null;
  const target =
    !signedIn && !path.startsWith('/sign-in') ? '/sign-in' : signedIn && path.startsWith('/sign-in') ? '/' : null;
  useEffect(() => {
    if (target) navigate('console', target, { replace: true });
  }, [target]);
  useEffect(() => {
    if (!signedIn) client.clear();
  }, [signedIn, client]);
  if (target) return null;
  if (path === '/sign-in') return <SignInPage area="console" />;
  if (path === '/sign-in/second-factor') return <ChallengePage area="console" />;
  const role = roleOf(token);
  if (!role) {
    return (
      <Shell area="console">
        <PageTitle>{t('console.noAccess')}</PageTitle>
        <p>{t('console.noAccessText')}</p>
      </Shell>
    );
  }
  return (
    <QueryClientProvider client={client}>
      <RoleContext.Provider value={role}>
        <Suspense
          fallback={
            <p className="loading" role="status">
              {t('app.loading')}
            </p>
          }
        >
          <Pages path={path} />
        </Suspense>
      </RoleContext.Provider>
    </QueryClientProvider>
  );
}

export default ConsoleArea;

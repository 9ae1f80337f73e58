import { lazy, Suspense, useEffect, useState } from 'react';
import { refreshSession } from './api/client';
import { storedRefreshToken } from './api/session';
import { AccountArea } from './areas/account/account-area';
import { t } from './i18n';
import { useRoute } from './router';

// The console (its pages, TanStack Query, the charts) is a chunk of its own: the account page never loads it.
const ConsoleArea = lazy(() => import('./areas/console/console-area'));

/** The app: one shell, one page per area. A reload first renews the session kept in this tab (api/session.ts). */
export function App() {
  const route = useRoute();
  const [restoring, setRestoring] = useState(() => storedRefreshToken() !== null);
  useEffect(() => {
    if (restoring) void refreshSession().finally(() => setRestoring(false));
  }, []); // once, at start
  useEffect(() => {
    document.title = route.area === 'console' ? t('app.console') : t('app.account');
  }, [route.area]);
  const loading = (
    <p className="loading" role="status">
      {t('app.loading')}
    </p>
  );
  if (restoring) return loading;
  if (route.area === 'console') {
    return (
      <Suspense fallback={loading}>
        <ConsoleArea path={route.path} />
      </Suspense>
    );
  }
  return <AccountArea path={route.area === 'account' ? route.path : '/not-found'} />;
}

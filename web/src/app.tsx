import { useEffect, useState } from 'react';
import { refreshSession } from './api/client';
import { storedRefreshToken } from './api/session';
import { AccountArea } from './areas/account/account-area';
import { ConsoleArea } from './areas/console/console-area';
import { t } from './i18n';
import { useRoute } from './router';

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
  if (restoring) return <p className="loading" role="status">{t('app.loading')}</p>;
  if (route.area === 'console') return <ConsoleArea />;
  return <AccountArea path={route.area === 'account' ? route.path : '/not-found'} />;
}

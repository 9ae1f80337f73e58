import { useEffect } from 'react';
import { useSession } from '../../api/session';
import { t } from '../../i18n';
import { href, navigate } from '../../router';
import { PageTitle, Shell } from '../../ui';
import { ChallengePage } from './challenge-page';
import { SecurityPage } from './security-page';
import { SignInPage } from './sign-in-page';

/** The member's account pages: `/account/sign-in`, `/account/sign-in/second-factor`, `/account/security`. */
export function AccountArea({ path }: { path: string }) {
  const { member } = useSession();
  const signedIn = member !== null;
  // Pages that need a session go to sign-in without one; sign-in goes to the security page with one.
  const target =
    path === '/' || (path === '/security' && !signedIn)
      ? signedIn
        ? '/security'
        : '/sign-in'
      : path.startsWith('/sign-in') && signedIn
        ? '/security'
        : null;
  useEffect(() => {
    if (target) navigate('account', target, { replace: true });
  }, [target]);
  if (target) return null;
  switch (path) {
    case '/sign-in':
      return <SignInPage />;
    case '/sign-in/second-factor':
      return <ChallengePage />;
    case '/security':
      return <SecurityPage />;
    default:
      return (
        <Shell area="account">
          <PageTitle>{t('app.notFound')}</PageTitle>
          <p>
            <a href={href('account', '/security')}>{t('app.toSecurity')}</a>
          </p>
        </Shell>
      );
  }
}

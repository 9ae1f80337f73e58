import { t } from '../../i18n';
import { PageTitle, Shell } from '../../ui';

/** The operator console's area: its pages come later; the route exists so the app is laid out for both. */
export function ConsoleArea() {
  return (
    <Shell area="console">
      <PageTitle>{t('console.title')}</PageTitle>
      <p>{t('console.soon')}</p>
    </Shell>
  );
}

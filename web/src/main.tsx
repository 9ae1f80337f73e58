import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app';
import { locale, t } from './i18n';
import './styles.css';

document.documentElement.lang = locale;
document.title = t('app.account');
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);

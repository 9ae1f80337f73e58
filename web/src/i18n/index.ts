import { en, MessageKey } from './en';
import { zhCN } from './zh-CN';

export type Locale = 'en' | 'zh-CN';
export type { MessageKey };

/** The first of the browser's languages that the app speaks (any Chinese → zh-CN), else English. */
export function pickLocale(languages: readonly string[]): Locale {
  for (const tag of languages) {
    const lower = tag.toLowerCase();
    if (lower.startsWith('zh')) return 'zh-CN';
    if (lower.startsWith('en')) return 'en';
  }
  return 'en';
}

export const locale: Locale = pickLocale(navigator.languages?.length ? navigator.languages : [navigator.language]);
const texts: Record<MessageKey, string> = locale === 'zh-CN' ? zhCN : en;

/** The text of `key` in the page's language, `{name}` placeholders filled from `values`. */
export function t(key: MessageKey, values: Record<string, string | number> = {}): string {
  return texts[key].replace(/\{(\w+)\}/g, (whole, name: string) => (name in values ? String(values[name]) : whole));
}

const dateTime = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short' });
export const formatDateTime = (iso: string | null | undefined): string => (iso ? dateTime.format(new Date(iso)) : '—');

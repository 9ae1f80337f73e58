import Negotiator from 'negotiator';
import { EN, MessageKey } from './messages.en';
import { ZH_CN } from './messages.zh-CN';

/** Languages of the envelope messages. `en` is also the language of text that has no catalog key (class-validator's own messages). */
export const LOCALES = ['en', 'zh-CN'] as const;
export type Locale = (typeof LOCALES)[number];
export const SOURCE_LOCALE: Locale = 'en';

const CATALOGS: Record<Locale, Record<MessageKey, string>> = { en: EN, 'zh-CN': ZH_CN };
/** Language tags offered to the negotiator and the catalog each one selects (`zh`, `zh-TW`, `zh-Hans` -> zh-CN). */
const TAGS: Record<string, Locale> = { en: 'en', 'zh-CN': 'zh-CN', zh: 'zh-CN' };

let defaultLocale: Locale = 'en';
let offered: string[] = offerFor(defaultLocale);
const negotiated = new Map<string, Locale>();
const CACHE_MAX = 256;
const CACHEABLE_HEADER = 200;

function offerFor(preferred: Locale): string[] {
  const tags = Object.keys(TAGS);
  // The preferred language first: `*` and ties go to it.
  return [preferred, ...tags.filter((t) => t !== preferred)];
}

export function isLocale(value: unknown): value is Locale {
  return typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
}

/** The language of requests without a usable Accept-Language (DEFAULT_LOCALE). Set once at boot. */
export function setDefaultLocale(locale: Locale): void {
  if (!isLocale(locale)) throw new Error(`unknown locale ${String(locale)}; one of ${LOCALES.join(', ')}`);
  defaultLocale = locale;
  offered = offerFor(locale);
  negotiated.clear();
}

export function getDefaultLocale(): Locale {
  return defaultLocale;
}

/**
 * The catalog for an `Accept-Language` header, negotiated by `negotiator` (RFC 7231 quality values and
 * prefix matching, as Express's req.acceptsLanguages). Nothing acceptable (or no header): the default.
 */
export function negotiateLocale(acceptLanguage: string | string[] | undefined): Locale {
  if (!acceptLanguage) return defaultLocale;
  const header = Array.isArray(acceptLanguage) ? acceptLanguage.join(',') : acceptLanguage;
  const hit = negotiated.get(header);
  if (hit) return hit;
  const tag = new Negotiator({ headers: { 'accept-language': header } }).language(offered);
  const locale = (tag && TAGS[tag]) || defaultLocale;
  if (header.length <= CACHEABLE_HEADER) {
    if (negotiated.size >= CACHE_MAX) negotiated.clear();
    negotiated.set(header, locale);
  }
  return locale;
}

/** The locale of a request (Node or Express). */
export function localeOf(req: { headers?: Record<string, string | string[] | undefined> } | undefined): Locale {
  return negotiateLocale(req?.headers?.['accept-language']);
}

/** Text that can be rendered in each locale. */
export interface LocalizedText {
  render(locale: Locale): string;
}

export function isLocalizedText(value: unknown): value is LocalizedText {
  return typeof value === 'object' && value !== null && typeof (value as LocalizedText).render === 'function';
}

export type MessageParams = Record<string, string | number | LocalizedText | null | undefined>;

/** A catalog message with its parameters; rendered per request, English in logs (`String(msg)`). */
export class Msg implements LocalizedText {
  constructor(
    readonly key: MessageKey,
    readonly params: MessageParams = {},
  ) {}

  render(locale: Locale): string {
    return translate(locale, this.key, this.params);
  }

  toString(): string {
    return this.render(SOURCE_LOCALE);
  }
}

/** `msg('auth.oldPasswordWrong')`, `msg('members.taken', { field })`. */
export function msg(key: MessageKey, params?: MessageParams): Msg {
  return new Msg(key, params);
}

export function hasMessage(key: string): key is MessageKey {
  return Object.prototype.hasOwnProperty.call(EN, key);
}

export function translate(locale: Locale, key: MessageKey, params: MessageParams = {}): string {
  const template = CATALOGS[locale]?.[key] ?? EN[key];
  return template.replace(/\{([A-Za-z0-9_]+)\}/g, (whole, name: string) => {
    if (!Object.prototype.hasOwnProperty.call(params, name)) return whole;
    const value = params[name];
    return isLocalizedText(value) ? value.render(locale) : String(value ?? '');
  });
}

/** The default message of an envelope code (`code.<n>`), if the catalog has one. */
export function codeMessage(code: number): Msg | undefined {
  const key = `code.${code}`;
  return hasMessage(key) ? msg(key) : undefined;
}

/**
 * The envelope message of an error in `locale`: its catalog message when it has one; text without a key
 * (a library's English) as is in English, else the code's default message in that language.
 */
export function localizedMessage(
  locale: Locale,
  code: number,
  text: LocalizedText | undefined,
  fallback: string,
): string {
  if (text) return text.render(locale);
  if (locale === SOURCE_LOCALE) return fallback;
  return codeMessage(code)?.render(locale) ?? fallback;
}

/** Content-Language of an envelope answer, and `Vary: Accept-Language` for caches (the message depends on it). */
export function markLanguage(
  res: { setHeader(name: string, value: string): unknown; vary?: (field: string) => unknown; headersSent?: boolean },
  locale: Locale,
): void {
  if (res.headersSent) return;
  res.setHeader('Content-Language', locale);
  if (typeof res.vary === 'function') res.vary('Accept-Language');
  else res.setHeader('Vary', 'Accept-Language');
}

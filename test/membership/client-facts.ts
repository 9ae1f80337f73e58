import type { ClientFacts } from '../../apps/membership/src/sessions/client-facts';
import { deviceName } from '../../apps/membership/src/sessions/client-info';

export const FIREFOX_ON_LINUX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';

/** The client facts a use case gets from `@Client()`, for calling it directly (the device follows the user agent). */
export function clientFacts(over: Partial<Omit<ClientFacts, 'device'>> = {}): ClientFacts {
  const ip = over.ip ?? '203.0.113.7';
  const userAgent = 'userAgent' in over ? over.userAgent : FIREFOX_ON_LINUX;
  const requestId = over.requestId ?? 'spec-request';
  return {
    locale: 'en',
    audit: { actor: { kind: 'system', id: null }, requestId, address: ip },
    secure: false,
    origin: 'http://members.example.test',
    cookie: undefined,
    fetchSite: undefined,
    ...over,
    ip,
    userAgent,
    requestId,
    device: deviceName(userAgent),
  };
}

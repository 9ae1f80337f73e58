import { clientIp, deviceName } from './client-info';

describe('deviceName', () => {
  it.each([
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36',
      'Chrome on Windows',
    ],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/130.0 Safari/537.36 Edg/130.0',
      'Edge on Windows',
    ],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1',
      'Safari on iOS',
    ],
    [
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/130.0 Mobile Safari/537.36 MicroMessenger/8.0.50',
      'WeChat on Android',
    ],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0; rv:131.0) Gecko/20100101 Firefox/131.0', 'Firefox on macOS'],
    ['curl/8.5.0', 'curl'],
  ])('%s -> %s', (ua, name) => expect(deviceName(ua)).toBe(name));

  it('falls back without a User-Agent and strips control characters from unknown ones', () => {
    expect(deviceName(undefined)).toBe('Unknown device');
    expect(deviceName('MyApp/1.0\n\u0000evil')).toBe('MyApp/1.0evil');
  });
});

describe('clientIp', () => {
  it('uses the address Express computed and unwraps IPv4-mapped IPv6', () => {
    expect(clientIp({ ip: '::ffff:10.0.0.7' } as any)).toBe('10.0.0.7');
    expect(clientIp({ ip: undefined, socket: { remoteAddress: '::1' } } as any)).toBe('::1');
  });
});

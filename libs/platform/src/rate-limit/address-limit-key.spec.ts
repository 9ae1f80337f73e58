import { addressLimitKey, clientLimitKey, networkLimitKey } from './address-limit-key';

describe('addressLimitKey', () => {
  it('keeps IPv4 as is and maps IPv4-mapped IPv6 to its IPv4', () => {
    expect(addressLimitKey('198.51.100.7')).toBe('198.51.100.7');
    expect(addressLimitKey('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(addressLimitKey('::ffff:c633:6407')).toBe('198.51.100.7');
  });

  it('groups IPv6 by its /64 by default, however the address is written', () => {
    const a = addressLimitKey('2001:db8:1:2:aaaa:bbbb:cccc:1');
    expect(a).toBe('2001:db8:1:2::/64');
    expect(addressLimitKey('2001:DB8:1:2::ffff')).toBe(a);
    expect(addressLimitKey('2001:0db8:0001:0002:0:0:0:1%eth0')).toBe(a);
    expect(addressLimitKey('2001:db8:1:3::1')).not.toBe(a);
  });

  it('takes the configured prefix length', () => {
    expect(addressLimitKey('2001:db8:1:2:3::1', 48)).toBe('2001:db8:1::/48');
    expect(addressLimitKey('2001:db8:1:2:3::1', 128)).toBe('2001:db8:1:2:3::1/128');
    expect(addressLimitKey('2001:db8:1:2:3::1', 56)).toBe(addressLimitKey('2001:db8:1:2:ff::1', 56));
  });

  it('reads the request address Express computed (req.ip), else the socket', () => {
    expect(clientLimitKey({ ip: '2001:db8::1234' })).toBe('2001:db8::/64');
    expect(clientLimitKey({ socket: { remoteAddress: '::ffff:127.0.0.1' } })).toBe('127.0.0.1');
    expect(clientLimitKey({})).toBe('unknown');
  });

  it('names the wider network of an address: IPv4 /24, IPv6 /48', () => {
    expect(networkLimitKey('198.51.100.7')).toBe('198.51.100.0/24');
    expect(networkLimitKey('::ffff:198.51.100.200')).toBe('198.51.100.0/24');
    expect(networkLimitKey('198.51.101.7')).not.toBe(networkLimitKey('198.51.100.7'));
    expect(networkLimitKey('2001:db8:1:2:3::1')).toBe('2001:db8:1::/48');
    expect(networkLimitKey('2001:db8:1:ff00::1')).toBe(networkLimitKey('2001:db8:1:2::1'));
    expect(networkLimitKey('2001:db8:2::1')).not.toBe(networkLimitKey('2001:db8:1::1'));
    expect(networkLimitKey(undefined)).toBe('unknown');
  });
});

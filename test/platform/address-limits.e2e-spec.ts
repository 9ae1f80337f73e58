import { randomInt } from 'crypto';
import { RunningApp, startGateway } from '../support/apps';

// Every per-address limit keys an IPv6 client by its /64 (RATE_LIMIT_IPV6_PREFIX): rotating through
// the addresses of one subscriber's network does not reset the count.
describe('per-address limits group IPv6 by network', () => {
  let gw: RunningApp;
  const LIMIT = 5;
  // A random /64 per run (the Redis used by tests may be shared).
  const net = `2001:db8:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}`;
  let host = 0;
  const inNet = () => `${net}:${(++host).toString(16)}:${randomInt(0x10000).toString(16)}::${randomInt(1, 0x10000).toString(16)}`;

  beforeAll(async () => {
    gw = await startGateway({ RATE_LIMIT_PER_MINUTE: String(LIMIT) });
  });
  afterAll(() => gw?.close());

  const guess = (from: string) =>
    fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer sk-wrong${randomInt(1e9)}`, 'x-forwarded-for': from } });

  it('refused API keys from every address of one /64 count together; another /64 and IPv4 are apart', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 2; i++) statuses.push((await guess(inNet())).status);
    expect(statuses).toEqual([...Array(LIMIT).fill(401), 429, 429]);
    const otherNet = `2001:db8:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}::1`;
    expect((await guess(otherNet)).status).toBe(401);
    expect((await guess(`203.0.113.${randomInt(1, 255)}`)).status).toBe(401);
  });
});

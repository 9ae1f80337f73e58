import Redis from 'ioredis';
import { Client } from 'pg';

export interface RoundTrip {
  via: 'pg' | 'redis';
  /** The SQL text, or the Redis command and its first argument (the key, or a script's text). */
  text: string;
}

/**
 * Records every statement sent to PostgreSQL (node-postgres `Client.query`, under TypeORM's pool too)
 * and every Redis command (ioredis `sendCommand`) made in this process until `stop()`: work is
 * counted, not timed (a Redis command is counted when it is written to a ready connection). `take()` returns what was recorded since the last take.
 */
export function recordRoundTrips(): { take(): RoundTrip[]; stop(): void } {
  let seen: RoundTrip[] = [];
  const realQuery = Client.prototype.query;
  const realSendCommand = Redis.prototype.sendCommand;
  const pg = jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string } | undefined;
    seen.push({ via: 'pg', text: typeof first === 'string' ? first : (first?.text ?? '') });
    return (realQuery as (...a: unknown[]) => unknown).apply(this, args);
  });
  const redis = jest.spyOn(Redis.prototype, 'sendCommand').mockImplementation(function (
    this: Redis,
    ...args: unknown[]
  ) {
    // A command sent before the connection is ready is queued and sent again through here once it is:
    // counted then, once.
    const cmd = args[0] as { name: string; args: Array<string | Buffer | number> };
    if (this.status === 'ready') seen.push({ via: 'redis', text: `${cmd.name} ${cmd.args[0]?.toString() ?? ''}` });
    return (realSendCommand as (...a: unknown[]) => unknown).apply(this, args);
  });
  return {
    take() {
      const out = seen;
      seen = [];
      return out;
    },
    stop() {
      pg.mockRestore();
      redis.mockRestore();
    },
  };
}

import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { SkipThrottle, Throttle, ThrottlerModule, ThrottlerStorage } from '@nestjs/throttler';
import type { AddressInfo } from 'net';
import { Public } from '@app/auth';
import { PlatformExpressAdapter } from '../http/express-adapter';
import { PlatformThrottlerGuard } from './platform-throttler.guard';

/** Counts what the throttler asks its storage: one increment per counted request. */
class CountingStorage implements ThrottlerStorage {
  readonly keys: string[] = [];
  private readonly hits = new Map<string, number>();
  increment(key: string, ttl: number, limit: number): ReturnType<ThrottlerStorage['increment']> {
    this.keys.push(key);
    const totalHits = (this.hits.get(key) ?? 0) + 1;
    this.hits.set(key, totalHits);
    const isBlocked = totalHits > limit;
    return Promise.resolve({ totalHits, timeToExpire: ttl, isBlocked, timeToBlockExpire: isBlocked ? ttl : 0 });
  }
}

@Controller('t')
class ProbeController {
  @Public()
  @Get('open')
  open(): string {
    return 'open';
  }

  @Public()
  @SkipThrottle()
  @Get('skipped')
  skipped(): string {
    return 'skipped';
  }

  // Needs credentials (a route without @Public() and without its own @Throttle): left to the credential limits.
  @Get('closed')
  closed(): string {
    return 'closed';
  }

  @Throttle({ default: { limit: 1, ttl: 60_000 } })
  @Get('own-limit')
  ownLimit(): string {
    return 'own';
  }
}

describe('PlatformThrottlerGuard', () => {
  const storage = new CountingStorage();
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    @Module({
      imports: [ThrottlerModule.forRoot({ throttlers: [{ limit: 2, ttl: 60_000 }], storage })],
      controllers: [ProbeController],
      providers: [{ provide: APP_GUARD, useClass: PlatformThrottlerGuard }],
    })
    class ProbeModule {}
    app = await NestFactory.create(ProbeModule, new PlatformExpressAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer() as { address(): AddressInfo }).address().port}/t`;
  });
  afterAll(() => app.close());
  beforeEach(() => (storage.keys.length = 0));

  it("counts a stranger's calls to @Public() routes per address and refuses past the limit", async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${url}/open`)).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(storage.keys).toHaveLength(3);
  });

  it('honours @SkipThrottle() on a public route', async () => {
    expect((await fetch(`${url}/skipped`)).status).toBe(200);
    expect(storage.keys).toHaveLength(0);
  });

  it('leaves a route that needs credentials to the credential limits: nothing counted, however many calls', async () => {
    for (let i = 0; i < 4; i++) expect((await fetch(`${url}/closed`)).status).toBe(200);
    expect(storage.keys).toHaveLength(0);
  });

  it('counts a route with its own @Throttle() by that limit', async () => {
    expect((await fetch(`${url}/own-limit`)).status).toBe(200);
    expect((await fetch(`${url}/own-limit`)).status).toBe(429);
    expect(storage.keys).toHaveLength(2);
  });
});

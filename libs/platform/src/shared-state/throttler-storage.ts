import { Injectable } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { SharedState } from './shared-state';

interface ThrottlerStorageRecord {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
}

/** @nestjs/throttler counters on SharedState, so every replica counts the same requests. */
@Injectable()
export class SharedThrottlerStorage implements ThrottlerStorage {
  constructor(private readonly state: SharedState) {}

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const blockKey = `throttle:block:${throttlerName}:${key}`;
    // The block check and the count together, in one round trip (shared with other requests' on PostgreSQL).
    const {
      blockedMs: blockedFor,
      count,
      ttlMs,
    } = await this.state.hit(`throttle:${throttlerName}:${key}`, blockKey, ttl);
    if (blockedFor > 0) {
      return {
        totalHits: limit + 1,
        timeToExpire: Math.ceil(blockedFor / 1000),
        isBlocked: true,
        timeToBlockExpire: Math.ceil(blockedFor / 1000),
      };
    }
    if (count > limit) {
      const block = blockDuration > 0 ? blockDuration : ttlMs;
      await this.state.setIfAbsent(blockKey, '1', block);
      return {
        totalHits: count,
        timeToExpire: Math.ceil(ttlMs / 1000),
        isBlocked: true,
        timeToBlockExpire: Math.ceil(block / 1000),
      };
    }
    return { totalHits: count, timeToExpire: Math.ceil(ttlMs / 1000), isBlocked: false, timeToBlockExpire: 0 };
  }
}

import { CanActivate, ExecutionContext, Injectable, OnModuleInit } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  ThrottlerModuleOptions,
  ThrottlerStorage,
} from '@nestjs/throttler';
import { IS_PUBLIC, RouteMetadataCache } from '@app/auth';

// @nestjs/throttler's metadata key for a route's own @Throttle limit (THROTTLER_LIMIT + throttler name).
const ROUTE_LIMIT = 'THROTTLER:LIMITdefault';

/**
 * The global per-IP throttler, for strangers: @Public() routes and routes with their own @Throttle.
 * Other routes need credentials, and PlatformAuthLimiter limits them instead (failed attempts per IP,
 * members per member, API keys per key), so an authenticated call costs no per-IP database write.
 */
@Injectable()
export class PlatformThrottlerGuard implements CanActivate, OnModuleInit {
  private readonly throttler: ThrottlerGuard;
  /** Whether each route is left to the credential limits. */
  private readonly skipped: RouteMetadataCache<boolean>;

  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    private readonly reflector: Reflector,
  ) {
    this.throttler = new ThrottlerGuard(options, storage, reflector);
    this.skipped = new RouteMetadataCache(
      (targets) =>
        !this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets) &&
        this.reflector.getAllAndOverride(ROUTE_LIMIT, targets) === undefined,
    );
  }

  onModuleInit(): Promise<void> {
    return this.throttler.onModuleInit();
  }

  /** A route left to the credential limits is let through at once; the throttler counts the others. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    return this.skips(context) || this.throttler.canActivate(context);
  }

  private skips(context: ExecutionContext): boolean {
    return context.getType() === 'http' && this.skipped.of(context);
  }
}

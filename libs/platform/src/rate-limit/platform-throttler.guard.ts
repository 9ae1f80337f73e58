import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import { IS_PUBLIC } from '@app/auth';

// @nestjs/throttler's metadata key for a route's own @Throttle limit (THROTTLER_LIMIT + throttler name).
const ROUTE_LIMIT = 'THROTTLER:LIMITdefault';

/**
 * The global per-IP throttler, for strangers: @Public() routes and routes with their own @Throttle.
 * Other routes need credentials, and PlatformAuthLimiter limits them instead (failed attempts per IP,
 * members per member, API keys per key), so an authenticated call costs no per-IP database write.
 */
@Injectable()
export class PlatformThrottlerGuard extends ThrottlerGuard {
  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return false;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return false;
    return this.reflector.getAllAndOverride(ROUTE_LIMIT, targets) === undefined;
  }
}

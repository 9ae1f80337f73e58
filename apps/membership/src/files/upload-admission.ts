import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Observable } from 'rxjs';
import type { Principal } from '@app/auth';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { clientLimitKey, Clock, UploadSlots } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { FilesRepository } from './files.repository';

export { UPLOAD_MIN_BYTES_PER_SECOND, UPLOAD_RATE_GRACE_MS } from '@app/platform';

/** Uploads of one member read at once in a replica (each is held in memory up to UPLOAD_MAX_BYTES). */
export const UPLOADS_IN_FLIGHT_PER_MEMBER = 2;
/** Uploads read at once in a replica, all members together: at most this many times UPLOAD_MAX_BYTES held. */
export const UPLOADS_IN_FLIGHT_PER_REPLICA = 16;
/**
 * Uploads read at once in a replica from one client network (its address's limit key: an IPv4 address, an IPv6
 * network of RATE_LIMIT_IPV6_PREFIX bits), whatever accounts send them: one network cannot take all the slots.
 */
export const UPLOADS_IN_FLIGHT_PER_NETWORK = 4;
/** What a multipart request may carry besides its file (boundaries, part headers, small fields). */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/**
 * Runs before the upload's body is read (multer holds a file in memory until the request ends):
 * - a member already keeping UPLOAD_MAX_BYTES_PER_MEMBER, or announcing a body that cannot fit what is left,
 *   is refused 413 without a byte read (the audit: a member over quota could keep sending 10 MB bodies, each
 *   held whole before the quota said no);
 * - a member reading UPLOADS_IN_FLIGHT_PER_MEMBER uploads already in this replica gets 429, a client network
 *   reading UPLOADS_IN_FLIGHT_PER_NETWORK gets 429, and the replica reading UPLOADS_IN_FLIGHT_PER_REPLICA
 *   gets 503, all with Retry-After (30 parallel uploads of one member took a replica from 239 MB to 601 MB;
 *   a few free accounts of one address could hold all the replica's slots);
 * - an admitted upload whose body arrives slower than UPLOAD_MIN_BYTES_PER_SECOND on average, past
 *   UPLOAD_RATE_GRACE_MS, is cut with 408 and its slot given back at once (UploadSlots in
 *   libs/platform/src/http/upload-slots.ts, shared with the AI gateway's multipart routes).
 * The quota itself is checked again, exactly, when the file is recorded (FilesRepository.insertWithinQuota).
 */
@Injectable()
export class UploadAdmission implements NestInterceptor {
  private readonly slots: UploadSlots;

  constructor(
    private readonly files: FilesRepository,
    private readonly config: MembershipConfig,
    clock: Clock,
  ) {
    const retryAfterSeconds = 1;
    this.slots = new UploadSlots(clock, {
      maxUploads: UPLOADS_IN_FLIGHT_PER_REPLICA,
      maxBytes: Infinity,
      replicaFull: () =>
        new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, msg('request.dependencyDown'), { retryAfterSeconds }),
      clientGone: () => new BusinessException(ErrorCode.BAD_REQUEST, msg('request.aborted')),
      tooSlow: (rate) =>
        new BusinessException(ErrorCode.REQUEST_TIMEOUT, msg('files.uploadTooSlow', { rate: rate / 1024 })),
    });
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = context.switchToHttp();
    const req = http.getRequest<Request & { principal?: Principal }>();
    const res = http.getResponse<Response>();
    const memberId = req.principal?.id;
    if (!memberId) return next.handle();
    const quota = this.config.UPLOAD_MAX_BYTES_PER_MEMBER;
    const announced = Number(req.headers['content-length']);
    const used = await this.files.usedBytes(memberId);
    if (used >= quota || (Number.isFinite(announced) && announced - MULTIPART_OVERHEAD_BYTES > quota - used))
      throw new BusinessException(ErrorCode.PAYLOAD_TOO_LARGE, msg('files.quotaExceeded', { max: quota }));
    const tooMany = (key: 'files.uploadsInFlight' | 'files.uploadsFromNetwork') => () =>
      new BusinessException(ErrorCode.TOO_MANY_REQUESTS, msg(key), { retryAfterSeconds: 1 });
    const callers = [
      { kind: 'member', key: memberId, max: UPLOADS_IN_FLIGHT_PER_MEMBER, refusal: tooMany('files.uploadsInFlight') },
      {
        kind: 'network',
        key: clientLimitKey(req, this.config.RATE_LIMIT_IPV6_PREFIX),
        max: UPLOADS_IN_FLIGHT_PER_NETWORK,
        refusal: tooMany('files.uploadsFromNetwork'),
      },
    ];
    return this.slots.admit(req, res, { callers, bytes: 0 }, next);
  }

  /** Uploads being read in this replica (for tests). */
  get inFlight(): number {
    return this.slots.inFlight;
  }
}

import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import type { Principal } from '@app/auth';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { MembershipConfig } from '../config/membership.config';
import { FilesRepository } from './files.repository';

/** Uploads of one member read at once in a replica (each is held in memory up to UPLOAD_MAX_BYTES). */
export const UPLOADS_IN_FLIGHT_PER_MEMBER = 2;
/** Uploads read at once in a replica, all members together: at most this many times UPLOAD_MAX_BYTES held. */
export const UPLOADS_IN_FLIGHT_PER_REPLICA = 16;
/** What a multipart request may carry besides its file (boundaries, part headers, small fields). */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/**
 * Runs before the upload's body is read (multer holds a file in memory until the request ends):
 * - a member already keeping UPLOAD_MAX_BYTES_PER_MEMBER, or announcing a body that cannot fit what is left,
 *   is refused 413 without a byte read (the audit: a member over quota could keep sending 10 MB bodies, each
 *   held whole before the quota said no);
 * - a member reading UPLOADS_IN_FLIGHT_PER_MEMBER uploads already in this replica gets 429, and the replica
 *   reading UPLOADS_IN_FLIGHT_PER_REPLICA gets 503, both with Retry-After (30 parallel uploads of one member
 *   took a replica from 239 MB to 601 MB).
 * The slots are this replica's memory, not a shared limit; the quota itself is checked again, exactly, when
 * the file is recorded (FilesRepository.insertWithinQuota).
 */
@Injectable()
export class UploadAdmission implements NestInterceptor {
  private readonly perMember = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly files: FilesRepository,
    private readonly config: MembershipConfig,
  ) {}

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
    if ((this.perMember.get(memberId) ?? 0) >= UPLOADS_IN_FLIGHT_PER_MEMBER)
      throw new BusinessException(ErrorCode.TOO_MANY_REQUESTS, msg('files.uploadsInFlight'), {
        retryAfterSeconds: 1,
      });
    if (this.total >= UPLOADS_IN_FLIGHT_PER_REPLICA)
      throw new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, msg('request.dependencyDown'), {
        retryAfterSeconds: 1,
      });
    this.perMember.set(memberId, (this.perMember.get(memberId) ?? 0) + 1);
    this.total++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.total--;
      const n = (this.perMember.get(memberId) ?? 1) - 1;
      if (n > 0) this.perMember.set(memberId, n);
      else this.perMember.delete(memberId);
    };
    res.once('close', release);
    res.once('finish', release);
    // A client gone while its upload was admitted (the guard, the quota read): 'close' came before the
    // listeners, so the slot is given back now, or it would stay taken for good.
    if (res.closed || res.destroyed || req.socket.destroyed) {
      release();
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('request.aborted'));
    }
    return next.handle();
  }

  /** Uploads being read in this replica (for tests). */
  get inFlight(): number {
    return this.total;
  }
}
